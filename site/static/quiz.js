/* Multiple-choice questions: each option carries its own feedback (data-feedback) and whether
   it is right (data-correct); clicking shows that feedback under the question, in a polite live
   region (.quiz-feedback, role="status") that is on the page, empty, from the start, so that
   the first answer is announced too. */
(function () {
  "use strict";
  document.querySelectorAll("[data-quiz]").forEach(function (quiz) {
    var feedback = quiz.querySelector(".quiz-feedback");
    var options = quiz.querySelectorAll("button[data-choice]");
    options.forEach(function (option) {
      option.setAttribute("aria-pressed", "false");
      option.addEventListener("click", function () {
        var right = option.dataset.correct === "true";
        options.forEach(function (other) {
          other.classList.remove("chosen", "right", "wrong");
          other.setAttribute("aria-pressed", "false");
        });
        option.classList.add("chosen", right ? "right" : "wrong");
        option.setAttribute("aria-pressed", "true");
        feedback.dataset.verdict = right ? "right" : "wrong";
        feedback.className = "quiz-feedback " + (right ? "right" : "wrong");
        feedback.textContent = (right ? "✓ 对。" : "✗ 不对。") + option.dataset.feedback;
      });
    });
  });
})();
