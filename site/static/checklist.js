/* Self-check lists: ticks are kept in this browser's localStorage only (one JSON object per
   list, key "infralab:<list id>") and restored when the page loads. */
(function () {
  "use strict";
  document.querySelectorAll("[data-checklist]").forEach(function (list) {
    var key = "infralab:" + list.dataset.checklist;
    var boxes = Array.prototype.slice.call(list.querySelectorAll("input[type=checkbox][data-item]"));
    var status = list.querySelector(".checklist-status");
    var state = {};
    var storage = null;
    try {
      storage = window.localStorage;
      state = JSON.parse(storage.getItem(key) || "{}") || {};
    } catch (err) {
      storage = null;
      state = {};
    }
    function show(message) {
      var done = boxes.filter(function (box) { return box.checked; }).length;
      status.textContent = message || ("已完成 " + done + " / " + boxes.length + "（保存在本浏览器）");
    }
    function save() {
      if (!storage) { show("无法保存：这个浏览器不允许本地存储"); return; }
      try { storage.setItem(key, JSON.stringify(state)); show(); }
      catch (err) { show("无法保存：" + err.name); }
    }
    boxes.forEach(function (box) {
      box.checked = state[box.dataset.item] === true;
      box.addEventListener("change", function () {
        state[box.dataset.item] = box.checked;
        save();
      });
    });
    var reset = list.querySelector("[data-reset]");
    if (reset) {
      reset.addEventListener("click", function () {
        state = {};
        boxes.forEach(function (box) { box.checked = false; });
        save();
      });
    }
    show(storage ? null : "无法保存：这个浏览器不允许本地存储");
  });
})();
