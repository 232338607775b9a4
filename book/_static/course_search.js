// Search result snippets from the chapter's own text. Sphinx cuts a result's snippet from
// the page's [role="main"] element, which in this theme also holds the page's buttons
// (launch, download, issue), its table of contents and the previous/next links, so a
// snippet could quote a button's label. This script runs after Sphinx's searchtools.js
// (it is deferred) and before the search starts (on DOMContentLoaded), and cuts the
// snippet from the article instead.
(() => {
  if (typeof Search === "undefined" || typeof Search.htmlToText !== "function") return;
  const wholePage = Search.htmlToText;
  Search.htmlToText = (htmlString, anchor) => {
    const page = new DOMParser().parseFromString(htmlString, "text/html");
    const article = page.querySelector("article.bd-article");
    if (!article) return wholePage(htmlString, anchor);
    for (const removal of [".headerlink", "script", "style"]) {
      article.querySelectorAll(removal).forEach((element) => element.remove());
    }
    if (anchor) {
      const section = article.querySelector(anchor);
      if (section) return section.textContent;
    }
    return article.textContent;
  };
})();
