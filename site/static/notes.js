/* Free-text notes: each textarea[data-notes] is kept in this browser's localStorage only
   (key "infralab:<notes id>") as it is typed, and restored when the page loads. */
(function () {
  "use strict";
  document.querySelectorAll("textarea[data-notes]").forEach(function (area) {
    var key = "infralab:" + area.dataset.notes;
    var status = area.parentNode.querySelector(".notes-status");
    var storage = null;
    function show(message) {
      if (status) { status.textContent = message; }
    }
    try {
      storage = window.localStorage;
      area.value = storage.getItem(key) || "";
    } catch (err) {
      storage = null;
    }
    function saved() {
      return area.value ? "已保存在本浏览器（" + area.value.length + " 字）" : "还没有记录";
    }
    area.addEventListener("input", function () {
      if (!storage) { show("无法保存：这个浏览器不允许本地存储"); return; }
      try {
        if (area.value) { storage.setItem(key, area.value); } else { storage.removeItem(key); }
        show(saved());
      } catch (err) {
        show("无法保存：" + err.name);
      }
    });
    show(storage ? saved() : "无法保存：这个浏览器不允许本地存储");
  });
})();
