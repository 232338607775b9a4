// A figure stays legible on a phone. Shrunk to a 390 px column, a figure drawn 1,200 px wide
// would show its labels at a third of their size; here each figure of the article keeps at
// least two thirds of its drawn width (course.css applies it below 640 px only) and its box
// scrolls sideways, as a wide equation does, instead of the page.
(() => {
  const LEGIBLE = 2 / 3;
  const keep = (img) => {
    if (!img.naturalWidth) return;
    img.style.setProperty("--legible-width", `${Math.round(img.naturalWidth * LEGIBLE)}px`);
    img.parentElement.classList.add("course-figure-box");
  };
  for (const img of document.querySelectorAll('article img[src*="_images/"]')) {
    if (img.complete) keep(img);
    else img.addEventListener("load", () => keep(img), { once: true });
  }
})();
