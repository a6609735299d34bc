// A printed or PDF copy has no buttons to press: open every collapsed
// solution and answer before printing (print.html prints all chapters), and
// close them again afterwards.
(function () {
    var opened = [];
    window.addEventListener("beforeprint", function () {
        document.querySelectorAll("details:not([open])").forEach(function (d) {
            d.open = true;
            opened.push(d);
        });
    });
    window.addEventListener("afterprint", function () {
        opened.forEach(function (d) { d.open = false; });
        opened = [];
    });
})();
