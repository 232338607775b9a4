"""The course's machinery that the book does not teach.

``course_utils`` holds the code the chapters explain; this package holds what
runs the course around it:

- ``exercises``: otter-grader masters → student notebooks and autograder zips
- ``grading``  : ``python -m course_utils grade``: batch grading into one CSV
- ``sandbox``  : the bubblewrap sandbox a submission runs in, and the wire to it
- ``runner``   : the student's side of grading, inside the sandbox
- ``wire``     : plain data (no pickle) between the two sides
- ``doctor``   : ``python -m course_utils doctor``: is this machine ready?
- ``cli``      : the command line behind ``python -m course_utils``
"""

from __future__ import annotations

__all__: list[str] = []
