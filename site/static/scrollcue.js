/* Wide content that scrolls sideways (display formulas, figures, tables) gets the class
   "is-scrollable" while it overflows its box; a display formula also gets a short line under
   it saying it can be scrolled, so nothing is clipped without a cue. */
(function () {
  "use strict";
  var boxes = document.querySelectorAll(".equation, .figure-scroll, table.data, .handout table");
  function cue(box, on) {
    var next = box.nextElementSibling;
    var has = next && next.classList.contains("scroll-cue");
    if (on && !has) {
      var line = document.createElement("p");
      line.className = "scroll-cue";
      line.setAttribute("aria-hidden", "true");
      line.textContent = "⇆ 公式较宽，可左右滑动查看";
      box.insertAdjacentElement("afterend", line);
    } else if (!on && has) {
      next.remove();
    }
  }
  function mark() {
    boxes.forEach(function (box) {
      var wide = box.scrollWidth > box.clientWidth + 1;
      box.classList.toggle("is-scrollable", wide);
      box.classList.toggle("at-end", wide && box.scrollLeft + box.clientWidth >= box.scrollWidth - 1);
      if (box.classList.contains("equation")) { cue(box, wide); }
    });
  }
  boxes.forEach(function (box) { box.addEventListener("scroll", mark, { passive: true }); });
  window.addEventListener("resize", mark);
  mark();
})();
