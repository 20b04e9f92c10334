/* The site header sticks to the top only on wide, tall viewports (site.css). While it does,
   the page's scroll padding must be at least its height, or a focused element or an anchor
   target could land under it; the header can wrap to two rows, so its height is measured here
   and kept in the CSS variable --header-h (site.css has a fallback for pages without script). */
(function () {
  "use strict";
  var header = document.querySelector(".site-header");
  if (!header) { return; }
  function measure() {
    document.documentElement.style.setProperty("--header-h", header.offsetHeight + "px");
  }
  window.addEventListener("resize", measure);
  if (window.ResizeObserver) { new ResizeObserver(measure).observe(header); }
  measure();
})();
