/* Free-text notes: each textarea[data-notes] is kept in this browser's localStorage only
   (key "infralab:<notes id>") as it is typed, and restored when the page loads. The visible
   status under the box (.notes-status) is not a live region: it changes on every keystroke.
   A hidden polite live region announces only a change of state (saving stopped working, or
   works again), never the typing itself. */
(function () {
  "use strict";
  document.querySelectorAll("textarea[data-notes]").forEach(function (area) {
    var key = "infralab:" + area.dataset.notes;
    var status = area.parentNode.querySelector(".notes-status");
    var live = document.createElement("span");
    live.className = "sr-only";
    live.setAttribute("role", "status");
    area.insertAdjacentElement("afterend", live);
    var storage = null;
    var lastError = null;
    function show(message) {
      if (status) { status.textContent = message; }
    }
    function announce(error) {  // only when the state changes
      if (error !== lastError) { live.textContent = error || "已恢复保存"; }
      lastError = error;
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
      var error = null;
      if (!storage) {
        error = "无法保存：这个浏览器不允许本地存储";
      } else {
        try {
          if (area.value) { storage.setItem(key, area.value); } else { storage.removeItem(key); }
        } catch (err) {
          error = "无法保存：" + err.name;
        }
      }
      show(error || saved());
      announce(error);
    });
    show(storage ? saved() : "无法保存：这个浏览器不允许本地存储");
  });
})();
