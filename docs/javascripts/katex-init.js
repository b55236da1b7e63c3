// Typeset the math that pymdownx.arithmatex (generic mode) wraps in <span|div class="arithmatex">,
// with the KaTeX copy shipped in docs/assets/katex (no network access needed).
function privsumRenderMath(root) {
  root.querySelectorAll(".arithmatex").forEach(function (element) {
    renderMathInElement(element, {
      delimiters: [
        { left: "\\[", right: "\\]", display: true },
        { left: "\\(", right: "\\)", display: false },
      ],
      throwOnError: false,
    });
  });
}

if (typeof document$ !== "undefined") {
  document$.subscribe(function () { privsumRenderMath(document.body); });  // Material's page loads
} else {
  document.addEventListener("DOMContentLoaded", function () { privsumRenderMath(document.body); });
}
