// Interactive figures, computed by the book's own crate compiled to
// WebAssembly (wasm/, loaded from widgets/attn-wasm.js). This script only
// reads the controls, calls the module and draws: every number on the
// widget comes from the module. A chapter places a widget with
// <div class="attn-widget" data-widget="NAME"></div> after the static
// figure it extends; the static figure stays, for print and for readers
// without JavaScript.
//
// Each widget root carries, for the browser check, data-out (the last
// call's numbers, as JSON) and data-ready once drawn.
(function () {
    "use strict";
    var roots = document.querySelectorAll(".attn-widget[data-widget]");
    if (!roots.length) return;
    var root = typeof path_to_root === "string" ? path_to_root : "";
    var SVG = "http://www.w3.org/2000/svg";

    function notBuilt() {
        roots.forEach(function (r) {
            r.classList.add("attn-widget-missing");
            r.textContent = "The interactive version of this figure is not in this copy of the " +
                "book: it is built with Debian's rustc-web (see the README).";
        });
    }

    var script = document.createElement("script");
    script.src = root + "widgets/attn-wasm.js";
    script.onerror = notBuilt;
    script.onload = function () {
        if (typeof window.ATTN_WASM !== "string") return notBuilt();
        if (typeof WebAssembly !== "object") {
            roots.forEach(function (r) { r.textContent = "This browser cannot run WebAssembly: the figure above shows the same."; });
            return;
        }
        var bytes = base64Bytes(window.ATTN_WASM);
        WebAssembly.instantiate(bytes, {}).then(function (result) {
            var call = module(result.instance.exports);
            roots.forEach(function (r) {
                var draw = widgets[r.dataset.widget];
                var failed = function (e) { r.textContent = "This interactive figure failed: " + e.message; };
                try {
                    // A widget that loads more (a model's weights) returns a
                    // promise: it is ready when that settles.
                    Promise.resolve(draw ? draw(r, call) : null).then(function () {
                        r.dataset.ready = "true";
                    }, failed);
                } catch (e) { failed(e); }
            });
        }, function (e) {
            roots.forEach(function (r) {
                r.textContent = "This browser could not run the interactive figures' WebAssembly: " + e.message;
            });
        });
    };
    document.head.appendChild(script);

    // The module's calls: numbers in, an array of numbers out, or the
    // crate's error message thrown. call.text() reads a call's text
    // result; call.hand(bytes) hands bytes over for the next call.
    function module(x) {
        var call = function (name) {
            var args = Array.prototype.slice.call(arguments, 1);
            var status = x[name].apply(null, args);
            if (status !== 0) {
                var message = new Uint8Array(x.memory.buffer, x.error_ptr(), x.error_len());
                throw new Error(new TextDecoder().decode(message));
            }
            return Array.from(new Float64Array(x.memory.buffer, x.out_ptr(), x.out_len()));
        };
        call.text = function () {
            return new TextDecoder().decode(new Uint8Array(x.memory.buffer, x.text_ptr(), x.text_len()));
        };
        call.hand = function (bytes) {
            var at = x.bytes_buffer(bytes.length); // may grow the memory: view it after
            new Uint8Array(x.memory.buffer, at, bytes.length).set(bytes);
        };
        return call;
    }
    function base64Bytes(text) {
        return Uint8Array.from(atob(text), function (c) { return c.charCodeAt(0); });
    }

    // ---- small helpers -------------------------------------------------
    function el(tag, attrs, parent, text) {
        var node = tag.indexOf("svg:") === 0
            ? document.createElementNS(SVG, tag.slice(4))
            : document.createElement(tag);
        Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, attrs[k]); });
        if (text !== undefined) node.textContent = text;
        if (parent) parent.appendChild(node);
        return node;
    }
    function slider(parent, name, label, min, max, step, value, show) {
        var row = el("div", { "class": "attn-widget-control" }, parent);
        var id = "w-" + Math.random().toString(36).slice(2);
        el("label", { "for": id }, row, label);
        var input = el("input", { id: id, type: "range", min: min, max: max, step: step, "data-input": name }, row);
        input.value = value;
        var out = el("output", { "for": id }, row);
        var shown = function () {
            out.textContent = show ? show(+input.value) : input.value;
            input.setAttribute("aria-valuetext", out.textContent);
        };
        input.addEventListener("input", shown);
        shown();
        return input;
    }
    function fixed(v, digits) { return (Math.abs(v) < 5e-4 && v !== 0 ? 0 : v).toFixed(digits); }
    function report(r, values) { r.dataset.out = JSON.stringify(values); }
    function failure(r, box, e) {
        box.textContent = e.message;
        r.dataset.out = JSON.stringify(e.message);
    }

    var widgets = {};

    // ---- chapter 2: a query among four keys --------------------------
    widgets.query = function (r, call) {
        var keys = call("keys");
        var svg = el("svg:svg", { viewBox: "-3.6 -3.6 7.2 7.2", "class": "attn-widget-plane", role: "img",
            "aria-label": "A plane with four keys and a query; lines from the query to each key are as thick as its weight" }, r);
        var lines = [], dots = [];
        for (var j = 0; j < 4; j++) {
            lines.push(el("svg:line", { "class": "attn-weight" }, svg));
        }
        for (j = 0; j < 4; j++) {
            var kx = keys[2 * j], ky = -keys[2 * j + 1];
            dots.push(el("svg:circle", { cx: kx, cy: ky, r: 0.16, "class": "attn-key" }, svg));
            el("svg:text", { x: kx + 0.22, y: ky - 0.22, "class": "attn-label" }, svg, "k" + (j + 1));
        }
        var output = el("svg:rect", { width: 0.26, height: 0.26, "class": "attn-output" }, svg);
        var query = el("svg:circle", { r: 0.2, "class": "attn-query" }, svg);
        var controls = el("div", { "class": "attn-widget-controls" }, r);
        var x = slider(controls, "x", "query x", -3, 3, 0.1, 1.5);
        var y = slider(controls, "y", "query y", -3, 3, 0.1, 1.0);
        var table = el("table", { "class": "attn-widget-readout" }, r);
        var head = el("tr", {}, table);
        var cells = el("tr", {}, table);
        ["k1", "k2", "k3", "k4", "output"].forEach(function (h) { el("th", {}, head, h); });
        var values = [0, 1, 2, 3, 4].map(function () { return el("td", {}, cells); });
        var error = el("p", { "class": "attn-widget-error", role: "alert" }, r);
        function update() {
            var qx = +x.value, qy = +y.value;
            try {
                var out = call("query_among_keys", qx, qy);
                error.textContent = "";
                report(r, out);
                for (var j = 0; j < 4; j++) {
                    lines[j].setAttribute("x1", qx); lines[j].setAttribute("y1", -qy);
                    lines[j].setAttribute("x2", keys[2 * j]); lines[j].setAttribute("y2", -keys[2 * j + 1]);
                    lines[j].setAttribute("stroke-width", 0.02 + 0.25 * out[j]);
                    values[j].textContent = fixed(out[j], 3);
                }
                output.setAttribute("x", out[4] - 0.13); output.setAttribute("y", -out[5] - 0.13);
                query.setAttribute("cx", qx); query.setAttribute("cy", -qy);
                values[4].textContent = "(" + fixed(out[4], 2) + ", " + fixed(out[5], 2) + ")";
            } catch (e) { failure(r, error, e); }
        }
        // Dragging sets the sliders, which the keyboard reaches too.
        var dragging = false;
        function drag(event) {
            if (!dragging) return;
            var point = svg.createSVGPoint();
            point.x = event.clientX; point.y = event.clientY;
            var p = point.matrixTransform(svg.getScreenCTM().inverse());
            x.value = Math.max(-3, Math.min(3, Math.round(p.x * 10) / 10));
            y.value = Math.max(-3, Math.min(3, Math.round(-p.y * 10) / 10));
            x.dispatchEvent(new Event("input"));
            y.dispatchEvent(new Event("input"));
            event.preventDefault();
        }
        svg.addEventListener("pointerdown", function (e) { dragging = true; svg.setPointerCapture(e.pointerId); drag(e); });
        svg.addEventListener("pointermove", drag);
        svg.addEventListener("pointerup", function () { dragging = false; });
        x.addEventListener("input", update);
        y.addEventListener("input", update);
        update();
    };

    // ---- chapter 3: d_k, temperature and saturation ------------------
    widgets.saturation = function (r, call) {
        var controls = el("div", { "class": "attn-widget-controls" }, r);
        var dk = slider(controls, "log2-dk", "dₖ", 2, 10, 1, 10, function (e) { return String(Math.pow(2, e)); });
        var tau = slider(controls, "log2-tau", "temperature τ", -2, 6, 0.1, 5,
            function (t) { return fixed(Math.pow(2, t), 2); });
        var buttons = el("div", { "class": "attn-widget-buttons" }, r);
        var unscaled = el("button", { type: "button" }, buttons, "τ = 1 (unscaled)");
        var scaled = el("button", { type: "button" }, buttons, "τ = √dₖ (scaled)");
        var svg = el("svg:svg", { viewBox: "0 0 320 130", "class": "attn-widget-bars", role: "img",
            "aria-label": "Eight bars, the softmax weights of eight keys" }, r);
        el("svg:line", { x1: 10, x2: 310, y1: 110, y2: 110, "class": "attn-axis" }, svg);
        var bars = [], labels = [];
        for (var j = 0; j < 8; j++) {
            bars.push(el("svg:rect", { x: 18 + 37 * j, width: 26, "class": "attn-bar" }, svg));
            labels.push(el("svg:text", { x: 31 + 37 * j, y: 125, "class": "attn-label attn-middle" }, svg, "k" + (j + 1)));
        }
        var readout = el("p", { "class": "attn-widget-summary" }, r);
        var error = el("p", { "class": "attn-widget-error", role: "alert" }, r);
        function update() {
            try {
                var out = call("saturation", Math.pow(2, +dk.value), Math.pow(2, +tau.value));
                error.textContent = "";
                report(r, out);
                for (var j = 0; j < 8; j++) {
                    var h = 100 * out[j];
                    bars[j].setAttribute("y", 110 - h);
                    bars[j].setAttribute("height", h);
                }
                readout.innerHTML = "";
                el("span", { "data-readout": "largest" }, readout, "largest weight " + fixed(out[17], 3));
                readout.appendChild(document.createTextNode("; "));
                el("span", { "data-readout": "jacobian" }, readout, "‖J‖_F " + fixed(out[16], 3));
            } catch (e) { failure(r, error, e); }
        }
        // "Scaled" keeps τ at √dₖ as dₖ moves, until τ is moved by hand.
        var follow = true;
        function setTau(value) { tau.value = value; tau.dispatchEvent(new Event("input")); }
        unscaled.addEventListener("click", function () { setTau(0); follow = false; });
        scaled.addEventListener("click", function () { follow = true; setTau(dk.value / 2); }); // log2 √dₖ
        dk.addEventListener("input", function () { if (follow) setTau(dk.value / 2); else update(); });
        tau.addEventListener("input", function (e) { if (e.isTrusted) follow = false; update(); });
        tau.addEventListener("keydown", function () { follow = false; });
        tau.addEventListener("pointerdown", function () { follow = false; });
        update();
    };

    // ---- chapter 6: a mask builder ------------------------------------
    widgets.mask = function (r, call) {
        var controls = el("div", { "class": "attn-widget-controls" }, r);
        var row = el("div", { "class": "attn-widget-control" }, controls);
        el("label", { "for": "mask-kind" }, row, "mask");
        var kind = el("select", { id: "mask-kind", "data-input": "kind" }, row);
        ["none", "causal (top left)", "causal (bottom right)", "sliding window", "key padding"].forEach(function (name, i) {
            el("option", { value: i }, kind, name);
        });
        kind.value = 1;
        var n = slider(controls, "n", "queries n", 1, 8, 1, 4);
        var m = slider(controls, "m", "keys m", 1, 8, 1, 6);
        var param = slider(controls, "param", "window w, or real keys", 0, 8, 1, 2);
        var svg = el("svg:svg", { viewBox: "0 0 340 300", "class": "attn-widget-grid", role: "img",
            "aria-label": "The weights, one row per query and one column per key; masked entries are crossed" }, r);
        var note = el("p", { "class": "attn-widget-summary" }, r);
        var error = el("p", { "class": "attn-widget-error", role: "alert" }, r);
        function update() {
            while (svg.firstChild) svg.removeChild(svg.firstChild);
            try {
                var out = call("masked_weights", +kind.value, +param.value, +n.value, +m.value);
                error.textContent = "";
                report(r, out);
                var rows = out[0], cols = out[1], at = 2, weightsAt = 2 + rows * cols, blindAt = 2 + 2 * rows * cols;
                var cell = Math.min(300 / cols, 40), empty = [];
                svg.setAttribute("viewBox", "0 0 340 " + (30 + rows * cell));
                for (var i = 0; i < rows; i++) {
                    var kept = 0;
                    for (var j = 0; j < cols; j++) {
                        var keep = out[at + i * cols + j] === 1, w = out[weightsAt + i * cols + j];
                        var x = 30 + j * cell, y = 20 + i * cell;
                        el("svg:rect", { x: x, y: y, width: cell - 2, height: cell - 2, "class": keep ? "attn-cell" : "attn-cell attn-masked",
                            "fill-opacity": keep ? 0.15 + 0.85 * w : 1 }, svg);
                        el("svg:text", { x: x + cell / 2 - 1, y: y + cell / 2 + 4, "class": "attn-label attn-middle attn-on-cell" }, svg,
                            keep ? fixed(w, 2) : "×");
                    }
                    el("svg:text", { x: 24, y: 20 + i * cell + cell / 2 + 4, "class": "attn-label attn-end" }, svg, "q" + (i + 1));
                    if (out[blindAt + i] === 1) empty.push("q" + (i + 1));
                }
                note.textContent = empty.length
                    ? empty.join(", ") + ": every key masked, so zero weights and a zero output (chapter 6)"
                    : "every query keeps at least one key; each row of weights sums to 1";
            } catch (e) {
                note.textContent = "";
                failure(r, error, e);
            }
        }
        // A window is square: its keys are the queries.
        function square() {
            if (+kind.value === 3 && m.value !== n.value) {
                m.value = n.value;
                m.dispatchEvent(new Event("input"));
            }
        }
        kind.addEventListener("change", square);
        n.addEventListener("input", square);
        [kind, n, m, param].forEach(function (input) {
            input.addEventListener("input", update);
            input.addEventListener("change", update);
        });
        update();
    };

    // ---- chapter 7: RoPE's score depends on the offset -----------------
    widgets.rope = function (r, call) {
        var controls = el("div", { "class": "attn-widget-controls" }, r);
        var pq = slider(controls, "p-q", "query position", 0, 63, 1, 10);
        var pk = slider(controls, "p-k", "key position", 0, 63, 1, 3);
        var curve = call("rope_curve");
        var svg = el("svg:svg", { viewBox: "0 0 340 170", "class": "attn-widget-curve", role: "img",
            "aria-label": "The score against the offset between query and key, with the current pair marked on the curve" }, r);
        var lo = Math.min.apply(null, curve), hi = Math.max.apply(null, curve);
        var reach = (curve.length - 1) / 2; // offsets −reach … reach
        var px = function (o) { return 20 + (o + reach) * 300 / (2 * reach); };
        var py = function (s) { return 150 - (s - lo) / (hi - lo) * 130; };
        el("svg:line", { x1: px(0), x2: px(0), y1: 15, y2: 150, "class": "attn-axis" }, svg);
        el("svg:polyline", { points: curve.map(function (s, i) { return px(i - reach) + "," + py(s); }).join(" "), "class": "attn-curve" }, svg);
        el("svg:text", { x: px(0) + 4, y: 165, "class": "attn-label" }, svg, "offset 0");
        var marker = el("svg:circle", { r: 5, "class": "attn-query" }, svg);
        var readout = el("p", { "class": "attn-widget-summary" }, r);
        var error = el("p", { "class": "attn-widget-error", role: "alert" }, r);
        function update() {
            try {
                var out = call("rope_score", +pq.value, +pk.value);
                error.textContent = "";
                report(r, out);
                marker.setAttribute("cx", px(out[1]));
                marker.setAttribute("cy", py(out[0]));
                readout.innerHTML = "";
                el("span", { "data-readout": "offset" }, readout, "offset " + out[1] + "; ");
                el("span", { "data-readout": "score" }, readout, "score " + fixed(out[0], 3));
            } catch (e) { failure(r, error, e); }
        }
        pq.addEventListener("input", update);
        pk.addEventListener("input", update);
        update();
    };

    // ---- chapter 16: the Shakespeare model writes ---------------------
    widgets.writer = function (r, call) {
        var controls = el("div", { "class": "attn-widget-controls" }, r);
        var row = el("div", { "class": "attn-widget-control attn-widget-prompt" }, controls);
        el("label", { "for": "writer-prompt" }, row, "prompt");
        var prompt = el("input", { id: "writer-prompt", type: "text", "data-input": "prompt", spellcheck: "false",
            autocapitalize: "none", autocomplete: "off", autocorrect: "off" }, row);
        prompt.value = "ROMEO:";
        var count = slider(controls, "count", "characters", 10, 400, 10, 120);
        var temperature = slider(controls, "temperature", "temperature", 0, 2, 0.05, 0.8);
        var topK = slider(controls, "top-k", "top-k (0: all)", 0, 84, 1, 0);
        var topP = slider(controls, "top-p", "top-p", 0.05, 1, 0.05, 1);
        var seed = slider(controls, "seed", "seed", 1, 99, 1, 1);
        var buttons = el("div", { "class": "attn-widget-buttons" }, r);
        var write = el("button", { type: "button", "data-action": "write" }, buttons, "Write");
        var text = el("p", { "class": "attn-widget-text" }, r);
        var status = el("p", { "class": "attn-widget-status", role: "status" }, r);
        var caption = el("p", { "class": "attn-widget-summary" }, r);
        var grid = el("div", { "class": "attn-widget-heads" }, r);
        var error = el("p", { "class": "attn-widget-error", role: "alert" }, r);
        var shape = null, chosen = [0, 0], canvases = [], last = null, loading = null;

        // The weights load once, on the first Write.
        function load() {
            if (loading) return loading;
            return (loading = new Promise(function (resolve, reject) {
                var s = document.createElement("script");
                s.src = root + "widgets/ch16-weights.js";
                s.onload = function () {
                    try {
                        call.hand(base64Bytes(window.ATTN_CH15_WEIGHTS));
                        shape = call("lm_load");
                        buildGrid();
                        resolve();
                    } catch (e) { reject(e); }
                };
                s.onerror = function () {
                    loading = null;
                    reject(new Error("the model's weights (widgets/ch16-weights.js) are not in this copy of the book"));
                };
                document.head.appendChild(s);
            }));
        }
        function buildGrid() {
            for (var b = 0; b < shape[0]; b++) {
                for (var h = 0; h < shape[1]; h++) {
                    var button = el("button", { type: "button", "class": "attn-head", "aria-pressed": String(b === 0 && h === 0),
                        "aria-label": "block " + (b + 1) + ", head " + (h + 1) }, grid);
                    var canvas = el("canvas", { width: 64, height: 64 }, button);
                    el("span", {}, button, (b + 1) + "." + (h + 1));
                    canvases.push(canvas);
                    button.addEventListener("click", select.bind(null, b, h, button));
                }
            }
        }
        function select(b, h, button) {
            chosen = [b, h];
            grid.querySelectorAll(".attn-head").forEach(function (x) { x.setAttribute("aria-pressed", "false"); });
            button.setAttribute("aria-pressed", "true");
            if (last) show(last.shown, last.out);
        }
        // The text so far, each of its last characters shaded by the weight
        // the chosen head puts on it from the newest one; and every head's
        // weights over the window.
        function show(shown, out) {
            var t = out[0], start = out[1], heads = shape[0] * shape[1];
            text.innerHTML = "";
            text.appendChild(document.createTextNode(shown.slice(0, start)));
            var k = chosen[0] * shape[1] + chosen[1];
            for (var j = 0; j < t; j++) {
                var w = out[2 + k * t * t + (t - 1) * t + j];
                el("span", { "class": "attn-char", style: "--w:" + w.toFixed(3) }, text, shown[start + j]);
            }
            caption.textContent = "Shaded: the weight block " + (chosen[0] + 1) + ", head " + (chosen[1] + 1) +
                " puts on each of the last " + t + " characters from the newest one. Below: every head's weights, one row a character.";
            // Each picture shades from the theme's background to its link
            // colour (both set on the canvas by widgets.css), by the square
            // root of the weight, so that small weights still show.
            var style = getComputedStyle(canvases[0]);
            var zero = rgb(style.backgroundColor), one = rgb(style.color);
            for (var i = 0; i < heads; i++) {
                var ctx = canvases[i].getContext("2d");
                var image = ctx.createImageData(64, 64);
                for (var q = 0; q < 64; q++) {
                    for (var c = 0; c < 64; c++) {
                        var v = q < t && c < t ? out[2 + i * t * t + q * t + c] : 0;
                        var at = 4 * (q * 64 + c), s = Math.sqrt(v);
                        for (var ch = 0; ch < 3; ch++) image.data[at + ch] = Math.round(zero[ch] + s * (one[ch] - zero[ch]));
                        image.data[at + 3] = 255;
                    }
                }
                ctx.putImageData(image, 0, 0);
            }
        }
        // "rgb(r, g, b)" as the browser reports a colour: [r, g, b].
        function rgb(colour) {
            var parts = (colour.match(/[0-9.]+/g) || ["0", "0", "0"]).slice(0, 3);
            return parts.map(Number);
        }
        function attention(shown) {
            call.hand(new TextEncoder().encode(shown));
            return call("lm_attention");
        }
        var writing = 0;
        function done(run, e) {
            if (e) failure(r, error, e);
            write.disabled = false;
            status.textContent = e ? "" : "Written.";
            r.dataset.written = String(run);
        }
        write.addEventListener("click", function () {
            var run = ++writing;
            r.dataset.written = "";
            error.textContent = "";
            status.textContent = "Writing…";
            write.disabled = true;
            load().then(function () {
                call.hand(new TextEncoder().encode(prompt.value));
                call("lm_write", +count.value, +temperature.value, +topK.value, +topP.value, +seed.value);
                var full = call.text();
                var i = Math.max(prompt.value.length, 1);
                (function next() {
                    try {
                        var shown = full.slice(0, i);
                        var out = attention(shown);
                        last = { shown: shown, out: out };
                        show(shown, out);
                        if (i < full.length) {
                            i += 1;
                            setTimeout(next, 15);
                            return;
                        }
                        var t = out[0], rows = [];
                        for (var h = 0; h < shape[0] * shape[1]; h++) {
                            rows = rows.concat(out.slice(2 + h * t * t + (t - 1) * t, 2 + (h + 1) * t * t));
                        }
                        report(r, { text: full, out: rows });
                        done(run);
                    } catch (e) { done(run, e); }
                })();
            }).catch(function (e) { done(run, e); });
        });
    };

    // ---- chapter 20: a digit the reader draws, read by the ViT ----------
    widgets.digit = function (r, call) {
        var side = 8, ink = 16;
        var pixels = new Array(side * side).fill(0);
        var row = el("div", { "class": "attn-widget-digit" }, r);
        var pad = el("div", { "class": "attn-digit-pad", role: "group",
            "aria-label": "An 8 by 8 grid to draw a digit on: drag across it, or press a square to darken it" }, row);
        var cells = pixels.map(function (_, i) {
            var b = el("button", { type: "button", "class": "attn-digit-cell", "data-pixel": String(i) }, pad);
            b.addEventListener("click", function (e) {
                if (e.detail !== 0) return; // a pointer painted it already
                pixels[i] = (pixels[i] + ink / 2) % (ink + ink / 2);
                update();
            });
            return b;
        });
        var hidden = el("input", { type: "hidden", "data-input": "pixels" }, row);
        var side_ = el("div", { "class": "attn-digit-readings" }, row);
        var bars = el("div", { "class": "attn-digit-bars" }, side_);
        var readouts = [];
        for (var k = 0; k < 10; k++) {
            var line = el("div", { "class": "attn-digit-bar" }, bars);
            el("span", { "class": "attn-digit-label" }, line, String(k));
            var bar = el("span", { "class": "attn-digit-fill" }, line);
            readouts.push({ bar: bar, text: el("span", { "data-readout": "p" + k }, line) });
        }
        var heads = el("div", { "class": "attn-digit-heads" }, side_);
        var buttons = el("div", { "class": "attn-widget-buttons" }, r);
        var clear = el("button", { type: "button" }, buttons, "Clear");
        var example = el("button", { type: "button" }, buttons, "A test digit");
        var caption = el("p", { "class": "attn-widget-summary" }, r);
        var error = el("p", { "class": "attn-widget-error", role: "alert" }, r);
        var shape = null, maps = [], examples = 0;

        function paint(e) {
            var target = document.elementFromPoint(e.clientX, e.clientY);
            if (!target || target.parentNode !== pad) return;
            var i = +target.dataset.pixel;
            if (pixels[i] !== ink) { pixels[i] = ink; update(); }
        }
        var painting = false;
        pad.addEventListener("pointerdown", function (e) { painting = true; pad.setPointerCapture(e.pointerId); paint(e); });
        pad.addEventListener("pointermove", function (e) { if (painting) paint(e); });
        pad.addEventListener("pointerup", function () { painting = false; });
        pad.addEventListener("pointercancel", function () { painting = false; });
        clear.addEventListener("click", function () { pixels.fill(0); update(); });
        example.addEventListener("click", function () {
            var digit = call("digit_example", examples);
            examples = (examples + 1) % 6;
            pixels = digit.slice(1);
            update();
        });
        hidden.addEventListener("input", function () {
            pixels = hidden.value.split(",").map(Number);
            show();
        });

        function update() {
            hidden.value = pixels.join(",");
            show();
        }
        // The grid as drawn, the ten probabilities, and each head's
        // attention from [CLS] over the patches, every number the module's.
        function show() {
            cells.forEach(function (c, i) {
                c.style.setProperty("--ink", String(Math.min(pixels[i], ink) / ink));
                c.setAttribute("aria-label", "row " + (Math.floor(i / side) + 1) + ", column " + (i % side + 1) + ": " + pixels[i] + " of 16");
            });
            error.textContent = "";
            var out;
            try {
                call.hand(Uint8Array.from(pixels));
                out = call("vit_read");
            } catch (e) {
                failure(r, error, e);
                return;
            }
            report(r, out);
            for (var k = 0; k < 10; k++) {
                readouts[k].bar.style.width = (100 * Math.max(0, Math.min(1, out[k]))) + "%";
                readouts[k].text.textContent = fixed(out[k], 3);
            }
            var grid = Math.round(Math.sqrt(shape[2])), top = 0;
            for (var j = 10; j < out.length; j++) top = Math.max(top, out[j]);
            maps.forEach(function (map, h) {
                map.forEach(function (cell, j) {
                    var w = out[10 + h * shape[2] + j];
                    cell.setAttribute("data-w", fixed(w, 3));
                    cell.setAttribute("fill-opacity", String(top > 0 ? Math.max(0, w) / top : 0));
                });
            });
            caption.textContent = "Beside each digit, the probability the model gives it. Each square: a head of the last block, " +
                "shaded by the weight [CLS] puts on each of its " + grid + " × " + grid + " patches (darkest: the largest weight of any head).";
        }
        return new Promise(function (resolve, reject) {
            var s = document.createElement("script");
            s.src = root + "widgets/ch20-weights.js";
            s.onload = function () {
                try {
                    call.hand(base64Bytes(window.ATTN_CH18_WEIGHTS));
                    shape = call("vit_load").map(Math.round);
                    var grid = Math.round(Math.sqrt(shape[2]));
                    for (var h = 0; h < shape[1]; h++) {
                        var box = el("figure", { "class": "attn-digit-head" }, heads);
                        var svg = el("svg:svg", { viewBox: "0 0 " + grid + " " + grid, role: "img",
                            "aria-label": "head " + (h + 1) + "'s attention over the patches" }, box);
                        var map = [];
                        for (var j = 0; j < shape[2]; j++) {
                            map.push(el("svg:rect", { x: j % grid, y: Math.floor(j / grid), width: 1, height: 1, "class": "attn-digit-weight" }, svg));
                        }
                        maps.push(map);
                        el("figcaption", {}, box, "head " + (h + 1));
                    }
                    example.click();
                    resolve();
                } catch (e) { reject(e); }
            };
            s.onerror = function () {
                reject(new Error("the model's weights (widgets/ch20-weights.js) are not in this copy of the book"));
            };
            document.head.appendChild(s);
        });
    };
    // ---- chapter 21: the flash kernel on the reader's GPU -------------
    // The page runs the crate's own WGSL (from the module) through WebGPU
    // and compares each number with what the crate computes for the same
    // inputs, in WebAssembly. data-out holds the GPU's output and
    // log-sum-exp; data-ran, the controls of the run that wrote it.
    widgets.gpu = function (r, call) {
        var adapterLine = el("p", { "class": "attn-widget-summary", "data-readout": "adapter" }, r);
        if (!navigator.gpu) {
            adapterLine.textContent = "This browser has no WebGPU, so the kernel cannot run here. " +
                "Chrome and Edge have it; Firefox and Safari have it in recent versions.";
            return null;
        }
        var controls = el("div", { "class": "attn-widget-controls" }, r);
        var log2n = slider(controls, "log2-n", "n, queries and keys", 6, 11, 1, 8,
            function (e) { return String(Math.pow(2, e)); });
        var dRow = el("div", { "class": "attn-widget-control" }, controls);
        el("label", { "for": "gpu-d" }, dRow, "width d");
        var dSel = el("select", { id: "gpu-d", "data-input": "d" }, dRow);
        [4, 16, 64].forEach(function (d) { el("option", { value: d }, dSel, String(d)); });
        dSel.value = 64;
        var maskRow = el("div", { "class": "attn-widget-control" }, controls);
        el("label", { "for": "gpu-causal" }, maskRow, "mask");
        var causal = el("select", { id: "gpu-causal", "data-input": "causal" }, maskRow);
        el("option", { value: 0 }, causal, "none");
        el("option", { value: 1 }, causal, "causal");
        var table = el("table", { "class": "attn-widget-readout" }, r);
        var rows = [["o-diff", "largest difference of the output from the crate's"],
            ["lse-diff", "largest difference of the log-sum-exp"],
            ["gpu-ms", "the GPU, ms (with the copy back)"],
            ["wasm-ms", "the crate in WebAssembly, ms"]];
        var cells = {};
        rows.forEach(function (row) {
            var tr = el("tr", {}, table);
            el("th", { scope: "row" }, tr, row[1]);
            cells[row[0]] = el("td", { "data-readout": row[0] }, tr);
        });
        var error = el("p", { "class": "attn-widget-error", role: "alert" }, r);
        var device = null, pipeline = null, running = Promise.resolve();

        function storage(data, usage) {
            var buffer = device.createBuffer({ size: Math.max(16, data.byteLength), usage: usage | GPUBufferUsage.COPY_DST });
            device.queue.writeBuffer(buffer, 0, data);
            return buffer;
        }
        function run() {
            var e = +log2n.value, d = +dSel.value, masked = +causal.value;
            var n = Math.pow(2, e), d4 = Math.ceil(d / 4);
            var inputs = call("gpu_inputs", e, d);
            var started = performance.now();
            var want = call("gpu_reference", e, d, masked);
            var wasmMs = performance.now() - started;
            function padded(offset) { // rows of d4 vec4s, zeros after d
                var a = new Float32Array(n * d4 * 4);
                for (var i = 0; i < n; i++) {
                    for (var c = 0; c < d; c++) a[i * d4 * 4 + c] = inputs[offset + i * d + c];
                }
                return a;
            }
            var sizes = new ArrayBuffer(32); // Sizes, as common.wgsl has it
            var words = new Uint32Array(sizes);
            words.set([n, n, d4, masked, 0, 0, n, 0]);
            new Float32Array(sizes)[4] = 1 / Math.sqrt(d);
            var S = GPUBufferUsage.STORAGE, C = GPUBufferUsage.COPY_SRC, R = GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST;
            var buffers = [storage(sizes, GPUBufferUsage.UNIFORM), storage(padded(0), S),
                storage(padded(n * d), S), storage(padded(2 * n * d), S),
                device.createBuffer({ size: n * d4 * 16, usage: S | C }),
                device.createBuffer({ size: n * 4, usage: S | C }),
                storage(new Uint32Array(4), S)];
            var bind = device.createBindGroup({ layout: pipeline.getBindGroupLayout(0),
                entries: buffers.map(function (b, i) { return { binding: i, resource: { buffer: b } }; }) });
            var readO = device.createBuffer({ size: n * d4 * 16, usage: R });
            var readLse = device.createBuffer({ size: n * 4, usage: R });
            started = performance.now();
            var encoder = device.createCommandEncoder();
            var pass = encoder.beginComputePass();
            pass.setPipeline(pipeline);
            pass.setBindGroup(0, bind);
            pass.dispatchWorkgroups(Math.ceil(n / 64));
            pass.end();
            encoder.copyBufferToBuffer(buffers[4], 0, readO, 0, n * d4 * 16);
            encoder.copyBufferToBuffer(buffers[5], 0, readLse, 0, n * 4);
            device.queue.submit([encoder.finish()]);
            return Promise.all([readO.mapAsync(GPUMapMode.READ), readLse.mapAsync(GPUMapMode.READ)]).then(function () {
                var gpuMs = performance.now() - started;
                var o = new Float32Array(readO.getMappedRange()), lse = new Float32Array(readLse.getMappedRange());
                var got = [], worstO = 0, worstLse = 0;
                for (var i = 0; i < n; i++) {
                    for (var c = 0; c < d; c++) {
                        got.push(o[i * d4 * 4 + c]);
                        worstO = Math.max(worstO, Math.abs(o[i * d4 * 4 + c] - want[i * d + c]));
                    }
                }
                for (i = 0; i < n; i++) {
                    got.push(lse[i]);
                    worstLse = Math.max(worstLse, Math.abs(lse[i] - want[n * d + i]));
                }
                buffers.concat([readO, readLse]).forEach(function (b) { b.destroy(); });
                report(r, got);
                cells["o-diff"].textContent = small(worstO);
                cells["lse-diff"].textContent = small(worstLse);
                cells["gpu-ms"].textContent = gpuMs.toFixed(1);
                cells["wasm-ms"].textContent = wasmMs.toFixed(1);
                error.textContent = "";
                r.dataset.ran = JSON.stringify({ "log2-n": e, d: d, causal: masked });
            });
        }
        function small(v) { return v < 1e-3 ? v.toExponential(1) : v.toFixed(3); }
        function update() {
            running = running.then(run).catch(function (e) { failure(r, error, e); });
            return running;
        }
        [log2n, dSel, causal].forEach(function (input) { input.addEventListener("change", update); });
        return navigator.gpu.requestAdapter().then(function (adapter) {
            if (!adapter) {
                adapterLine.textContent = "This browser has WebGPU but found no adapter to run the kernel on.";
                return null;
            }
            var info = adapter.info || {};
            adapterLine.textContent = "Adapter: " + ([info.vendor, info.architecture, info.description]
                .filter(Boolean).join(", ") || "unnamed") + ".";
            return adapter.requestDevice().then(function (dev) {
                device = dev;
                call("gpu_kernel");
                var module = device.createShaderModule({ code: call.text() });
                return device.createComputePipelineAsync({ layout: "auto", compute: { module: module, entryPoint: "forward" } });
            }).then(function (p) {
                pipeline = p;
                return update();
            });
        });
    };
})();
