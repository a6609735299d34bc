// Quizzes that answer back. A chapter writes each question as a list of
// options, "(a) …", "(b) …", followed by a collapsed answer whose text
// starts with the right letter, "(b). Because …". This script turns the
// options into buttons: pressing one marks it right or wrong (in the button
// and in a status line that screen readers announce), and the right one
// opens the explanation. Without JavaScript, in print, and in the student
// edition (which has no answers) the quiz stays as written.
(function () {
    var letterOf = function (el) {
        var m = el && el.textContent.match(/^\s*\(([a-z])\)/);
        return m ? m[1] : null;
    };
    document.querySelectorAll("details").forEach(function (details) {
        var summary = details.querySelector("summary");
        var list = details.previousElementSibling;
        if (!summary || summary.textContent.trim() !== "Answer") return;
        if (!list || list.tagName !== "UL") return;
        var right = letterOf(details.querySelector("p"));
        var items = Array.prototype.filter.call(list.children, function (li) {
            return li.tagName === "LI";
        });
        var letters = items.map(letterOf);
        if (!right || letters.indexOf(right) < 0) return;

        var status = document.createElement("p");
        status.className = "quiz-status";
        status.setAttribute("role", "status");
        status.setAttribute("aria-live", "polite");
        list.after(status);
        items.forEach(function (li, i) {
            var button = document.createElement("button");
            button.type = "button";
            button.className = "quiz-option";
            while (li.firstChild) button.appendChild(li.firstChild);
            li.appendChild(button);
            button.addEventListener("click", function () {
                var ok = letters[i] === right;
                if (!button.querySelector(".quiz-mark")) {
                    var mark = document.createElement("span");
                    mark.className = "quiz-mark";
                    mark.textContent = ok ? " ✓ right" : " ✗ not this one";
                    button.appendChild(mark);
                }
                button.classList.add(ok ? "quiz-right" : "quiz-wrong");
                // Emptied first, so that pressing the same option again is
                // announced again.
                status.textContent = "";
                status.textContent = ok
                    ? "(" + right + ") is right: the explanation is open below."
                    : "(" + letters[i] + ") is not right. Try another, or open the answer.";
                if (ok) details.open = true;
            });
        });
        list.classList.add("quiz-options");
        list.dataset.quiz = "ready";
    });
})();
