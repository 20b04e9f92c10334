/* Wide content that scrolls sideways (display formulas, figures, tables) gets the class
   "is-scrollable" while it overflows its box, so the stylesheet can show a cue. */
(function () {
  "use strict";
  var boxes = document.querySelectorAll(".equation, .figure-scroll, table.data, .handout table");
  function mark() {
    boxes.forEach(function (box) {
      var wide = box.scrollWidth > box.clientWidth + 1;
      box.classList.toggle("is-scrollable", wide);
      box.classList.toggle("at-end", wide && box.scrollLeft + box.clientWidth >= box.scrollWidth - 1);
    });
  }
  boxes.forEach(function (box) { box.addEventListener("scroll", mark, { passive: true }); });
  window.addEventListener("resize", mark);
  mark();
})();
