/* Explorers: controls that switch a figure and some table cells among variants computed at
   build time. Nothing is simulated here. An explorer element [data-explorer] names
   - data-figure: the element whose content is replaced by <template data-variant="KEY">;
   - data-variants: a <script type="application/json"> mapping KEY to {"cells": {name: text},
     "note": text}; every element [data-cell="name"] on the page gets that text.
   KEY is "name=value" of every control [data-param] (checked radios only), sorted by name and
   joined with ";". Range controls show their value in <output data-show="name">. */
(function () {
  "use strict";
  document.querySelectorAll("[data-explorer]").forEach(function (box) {
    var variants = JSON.parse(document.querySelector(box.dataset.variants).textContent);
    var figure = document.querySelector(box.dataset.figure);
    var controls = Array.prototype.slice.call(box.querySelectorAll("[data-param]"));
    var note = box.querySelector("[data-note]");
    function key() {
      var params = {};
      controls.forEach(function (c) {
        if (c.type === "radio" && !c.checked) { return; }
        params[c.dataset.param] = c.value;
      });
      return Object.keys(params).sort().map(function (name) {
        return name + "=" + params[name];
      }).join(";");
    }
    function show() {
      controls.forEach(function (c) {
        box.querySelectorAll('output[data-show="' + c.dataset.param + '"]').forEach(function (o) {
          o.textContent = c.value;
        });
      });
      var k = key();
      var variant = variants[k];
      var template = document.querySelector('template[data-variant="' + k + '"]');
      if (!variant || !template) {
        note.textContent = "这一组参数没有预先算好的运行。";
        return;
      }
      figure.replaceChildren(template.content.cloneNode(true));
      Object.keys(variant.cells).forEach(function (name) {
        document.querySelectorAll('[data-cell="' + name + '"]').forEach(function (el) {
          el.textContent = variant.cells[name];
        });
      });
      note.textContent = variant.note;
      box.dataset.current = k;
    }
    controls.forEach(function (c) {
      c.addEventListener("input", show);
      c.addEventListener("change", show);
    });
    box.dataset.current = key();
  });
})();
