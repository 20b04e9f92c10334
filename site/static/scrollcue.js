/* Wide content that scrolls sideways (display formulas, code blocks, figures, tables) gets the
   class "is-scrollable" while it overflows its box. While it overflows it is also a keyboard stop
   (tabindex 0) with a name, so that it can be scrolled with the arrow keys; a display formula
   also gets a short line under it, and a table one above it, saying it can be scrolled, so
   nothing is clipped without a cue.
   Boxes are checked again whenever one changes size (window resize, a <details> opening, text
   spacing) and when a <details> is toggled. */
(function () {
  "use strict";
  var boxes = document.querySelectorAll(".equation, .figure-scroll, table.data, .handout table, pre");
  // The line that says a box scrolls: under a formula, above a table (whose rows may run
  // far below the fold, so the cue must come before them).
  function cue(box, on) {
    var table = box.tagName === "TABLE";
    var near = table ? box.previousElementSibling : box.nextElementSibling;
    var has = near && near.classList.contains("scroll-cue");
    if (on && !has) {
      var line = document.createElement("p");
      line.className = "scroll-cue" + (table ? " before" : "");
      line.setAttribute("aria-hidden", "true");
      line.textContent = table ? "⇆ 表格较宽，可左右滑动查看（选中后也可用方向键）" : "⇆ 公式较宽，可左右滑动查看";
      box.insertAdjacentElement(table ? "beforebegin" : "afterend", line);
    } else if (!on && has) {
      near.remove();
    }
  }
  var used = {};
  function name(box) {  // unique, so that the regions can be told apart in a landmark list
    var text;
    if (box.classList.contains("equation")) {
      var number = box.querySelector(".eq-no");
      var math = box.querySelector("math");
      text = "公式 " + (number ? number.textContent : (math && math.getAttribute("alttext")) || "");
    } else if (box.tagName === "PRE") {
      text = "代码：" + box.textContent.trim().split("\n")[0];
    } else {
      var figure = box.closest("figure");
      var caption = figure && figure.querySelector("figcaption");
      text = caption ? caption.textContent.split("·")[0].trim() : (box.tagName === "TABLE" ? "表格" : "图");
    }
    text = text.length > 48 ? text.slice(0, 47) + "…" : text;
    used[text] = (used[text] || 0) + 1;
    return text + (used[text] > 1 ? "（" + used[text] + "）" : "") + "，可左右滑动";
  }
  function focusable(box, on) {
    var mine = box.hasAttribute("data-scroll-stop");
    if (on && !mine && !box.hasAttribute("tabindex")) {
      box.setAttribute("data-scroll-stop", "");
      box.tabIndex = 0;
      if (box.tagName !== "TABLE") { box.setAttribute("role", "region"); }
      if (box.tagName !== "TABLE" || !box.caption) { box.setAttribute("aria-label", name(box)); }
    } else if (!on && mine) {
      ["data-scroll-stop", "tabindex", "role", "aria-label"].forEach(function (attr) {
        box.removeAttribute(attr);
      });
    }
  }
  function mark() {
    boxes.forEach(function (box) {
      if (!box.getClientRects().length) { return; }  // not rendered (a closed <details>)
      var wide = box.scrollWidth > box.clientWidth + 1;
      box.classList.toggle("is-scrollable", wide);
      box.classList.toggle("at-end", wide && box.scrollLeft + box.clientWidth >= box.scrollWidth - 1);
      focusable(box, wide);
      if (box.classList.contains("equation") || box.tagName === "TABLE") { cue(box, wide); }
    });
  }
  boxes.forEach(function (box) { box.addEventListener("scroll", mark, { passive: true }); });
  window.addEventListener("resize", mark);
  document.addEventListener("toggle", mark, true);
  if (window.ResizeObserver) {
    var observer = new ResizeObserver(mark);
    boxes.forEach(function (box) { observer.observe(box); });
  }
  mark();
})();
