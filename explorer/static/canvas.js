/* thunder explorer: the graph canvas. Zoom (wheel, buttons, + - 0 keys), pan (drag), fit at a
   readable size, a minimap, click a node to select it, double-click a module to fold it.
   No dependencies; works on a page from a file. Each `.thx-canvas` holds one graphviz SVG whose
   nodes and clusters carry `thx-s-<URL-quoted id>` classes (explorer/views/dot_writer.py).
   Events, dispatched on the canvas and bubbling:
     thx-select  {ids, id}  a node or cluster was clicked (ids: what it stands for)
     thx-toggle  {id}       a module was double-clicked; cancel it (preventDefault) to fold or
                            open it yourself (the notebook widget re-lays the graph out), else the
                            canvas folds an open module's cluster in place. */
(function () {
  "use strict";
  if (window.thxCanvas) {
    window.thxCanvas.scan(document);
    return;
  }
  var MIN_TEXT_PX = 9; // fit never shrinks node labels below this
  var NATURAL = 4 / 3; // graphviz draws in points: 1 pt = 4/3 px
  var PREFIX = "thx-s-";

  function idsOf(g) {
    var out = [];
    if (!g || !g.classList) return out;
    g.classList.forEach(function (c) {
      if (c.indexOf(PREFIX) === 0) out.push(decodeURIComponent(c.slice(PREFIX.length)));
    });
    return out;
  }

  function hit(target, svg) {
    var g = target && target.closest ? target.closest("g.node, g.cluster") : null;
    return g && svg.contains(g) && idsOf(g).length ? g : null;
  }

  function nodeFont(svg) {
    var t = svg.querySelector("g.node text");
    var f = t ? parseFloat(t.getAttribute("font-size")) : NaN;
    return isFinite(f) && f > 0 ? f : 10;
  }

  function btn(bar, text, title, fn) {
    var b = document.createElement("button");
    b.type = "button";
    b.textContent = text;
    b.title = title;
    b.className = "thx-cv-btn";
    b.addEventListener("click", function (e) {
      e.stopPropagation();
      fn();
    });
    bar.appendChild(b);
    return b;
  }

  // the view a canvas had, by its graph's label, so that a re-rendered graph (after a click in
  // the widget) opens where the user was
  var views = {};

  function Canvas(root) {
    var self = this;
    var view = root.querySelector(".thx-cv-view");
    var svg = view && view.querySelector("svg");
    if (!svg) return;
    this.root = root;
    this.view = view;
    this.svg = svg;
    var vb = (svg.getAttribute("viewBox") || "").split(/[\s,]+/).map(parseFloat);
    if (vb.length !== 4 || !(vb[2] > 0 && vb[3] > 0)) {
      var bb = svg.getBBox();
      vb = [bb.x, bb.y, bb.width, bb.height];
    }
    this.g = { x: vb[0], y: vb[1], w: vb[2], h: vb[3] };
    this.minScale = MIN_TEXT_PX / nodeFont(svg);
    var label = svg.querySelector("g.graph > text");
    this.key = (label ? label.textContent : "") + "|" + Math.round(this.g.w) + "x" + Math.round(this.g.h);
    svg.removeAttribute("width");
    svg.removeAttribute("height");
    svg.style.maxWidth = "none";
    svg.style.width = "100%";
    svg.style.height = "100%";
    svg.style.display = "block";
    svg.setAttribute("preserveAspectRatio", "xMinYMin meet");
    root.classList.add("thx-cv-live");

    var bar = document.createElement("div");
    bar.className = "thx-cv-bar";
    btn(bar, "+", "zoom in (wheel, +)", function () { self.zoomBy(1.25); });
    btn(bar, "\u2212", "zoom out (wheel, -)", function () { self.zoomBy(0.8); });
    btn(bar, "fit", "fit at a readable size (0)", function () { self.fit(); });
    btn(bar, "1:1", "the size graphviz drew it", function () { self.zoomTo(NATURAL); });
    this.foldBtn = btn(bar, "fold module", "fold or open the selected module (double-click it)", function () {
      if (self.selected) self.toggle(self.selected);
    });
    this.foldBtn.style.display = "none";
    this.info = document.createElement("span");
    this.info.className = "thx-cv-info";
    bar.appendChild(this.info);
    root.insertBefore(bar, view);

    var mini = document.createElement("div");
    mini.className = "thx-cv-mini";
    var img = document.createElement("img");
    img.alt = "minimap";
    img.draggable = false;
    var box = document.createElement("div");
    box.className = "thx-cv-box";
    mini.appendChild(img);
    mini.appendChild(box);
    view.appendChild(mini);
    this.mini = mini;
    this.miniImg = img;
    this.miniBox = box;

    this.s = 1;
    this.tx = 0;
    this.ty = 0;
    this.sizeView();
    var was = views[this.key];
    if (was) this.restore(was);
    else this.fit();
    this.events();
    root.thxCanvas = this;
    // what the page selected (the tree, in the widget): marked, and brought into view if it is not
    if (root.dataset.thxReveal) this.reveal(root.dataset.thxReveal, true);
  }

  Canvas.prototype.sizeView = function () {
    var vw = this.view.clientWidth || 800;
    var maxH = Math.max(240, Math.min(window.innerHeight * 0.75 || 600, 760));
    var s = Math.max(this.minScale, Math.min(vw / this.g.w, NATURAL));
    var h = Math.min(maxH, Math.max(200, this.g.h * s + 8));
    this.view.style.height = Math.round(h) + "px";
    this.vw = vw;
    this.vh = h;
  };

  // Fit: the whole graph when its labels stay readable, else its width, else the smallest
  // readable scale (then pan): never larger than graphviz's own size.
  Canvas.prototype.fitScale = function () {
    var all = Math.min(this.vw / this.g.w, this.vh / this.g.h);
    var wide = this.vw / this.g.w;
    if (all >= this.minScale) return Math.min(all, NATURAL);
    if (wide >= this.minScale) return Math.min(wide, NATURAL);
    return this.minScale;
  };

  Canvas.prototype.fit = function () {
    this.s = this.fitScale();
    var w = this.g.w * this.s;
    var h = this.g.h * this.s;
    this.tx = (this.vw - w) / 2; // centred
    this.ty = h <= this.vh ? (this.vh - h) / 2 : 0; // taller ones: from the top, where data comes in
    if (w > this.vw) {
      // wider ones: around the first node (the middle of a graph of module clusters is often
      // empty space), as far left as the graph goes
      var first = this.firstNode();
      if (first) this.tx = Math.min(0, this.vw / 2 - (first.x - this.g.x) * this.s);
    }
    this.apply();
  };

  // The graph point at the centre of a node or cluster `g` (the SVG's own units).
  Canvas.prototype.centreOf = function (g) {
    var bb = g.getBBox();
    var m = g.closest("g.graph").transform.baseVal.consolidate();
    var x = bb.x + bb.width / 2;
    var y = bb.y + bb.height / 2;
    if (m) {
      x += m.matrix.e;
      y += m.matrix.f;
    }
    return { x: x, y: y };
  };

  // The top-most node that selects something (where data comes in), or null.
  Canvas.prototype.firstNode = function () {
    var best = null;
    var nodes = this.svg.querySelectorAll("g.node");
    for (var i = 0; i < nodes.length; i++) {
      if (!idsOf(nodes[i]).length) continue;
      var c = this.centreOf(nodes[i]);
      if (!best || c.y < best.y) best = c;
    }
    return best;
  };

  Canvas.prototype.restore = function (v) {
    this.s = v.s;
    this.tx = this.vw / 2 - (v.cx - this.g.x) * this.s;
    this.ty = this.vh / 2 - (v.cy - this.g.y) * this.s;
    this.apply();
  };

  Canvas.prototype.lowest = function () {
    return Math.min(this.minScale, Math.min(this.vw / this.g.w, this.vh / this.g.h)) * 0.9;
  };

  Canvas.prototype.zoomTo = function (s, px, py) {
    s = Math.max(this.lowest(), Math.min(s, 8));
    if (px === undefined) {
      px = this.vw / 2;
      py = this.vh / 2;
    }
    // keep the graph point under (px, py) where it is
    this.tx = px - ((px - this.tx) * s) / this.s;
    this.ty = py - ((py - this.ty) * s) / this.s;
    this.s = s;
    this.apply();
  };

  Canvas.prototype.zoomBy = function (f, px, py) {
    this.zoomTo(this.s * f, px, py);
  };

  Canvas.prototype.clamp = function () {
    // at least a quarter of the view keeps some of the graph in it
    var w = this.g.w * this.s;
    var h = this.g.h * this.s;
    var mx = this.vw * 0.75;
    var my = this.vh * 0.75;
    this.tx = Math.min(mx, Math.max(this.vw - mx - w, this.tx));
    this.ty = Math.min(my, Math.max(this.vh - my - h, this.ty));
  };

  Canvas.prototype.apply = function () {
    var self = this;
    this.clamp();
    if (this.frame) return;
    this.frame = requestAnimationFrame(function () {
      self.frame = 0;
      var s = self.s;
      self.svg.setAttribute(
        "viewBox",
        [self.g.x - self.tx / s, self.g.y - self.ty / s, self.vw / s, self.vh / s].join(" ")
      );
      self.info.textContent = "text " + (nodeFont(self.svg) * s).toFixed(0) + " px";
      views[self.key] = {
        s: s,
        cx: self.g.x + (self.vw / 2 - self.tx) / s,
        cy: self.g.y + (self.vh / 2 - self.ty) / s,
      };
      self.drawMini();
    });
  };

  Canvas.prototype.drawMini = function () {
    var fits = this.g.w * this.s <= this.vw + 1 && this.g.h * this.s <= this.vh + 1;
    this.mini.style.display = fits ? "none" : "block";
    if (fits) return;
    if (!this.miniImg.src) {
      var text = new XMLSerializer().serializeToString(this.svg);
      var copy = text.replace(/viewBox="[^"]*"/, 'viewBox="' + [this.g.x, this.g.y, this.g.w, this.g.h].join(" ") + '"');
      this.miniImg.src = "data:image/svg+xml;charset=utf-8," + encodeURIComponent(copy);
    }
    var k = Math.min(160 / this.g.w, 160 / this.g.h);
    this.k = k;
    this.mini.style.width = Math.round(this.g.w * k) + "px";
    this.mini.style.height = Math.round(this.g.h * k) + "px";
    var b = this.miniBox.style;
    b.left = (-this.tx / this.s) * k + "px";
    b.top = (-this.ty / this.s) * k + "px";
    b.width = (this.vw / this.s) * k + "px";
    b.height = (this.vh / this.s) * k + "px";
  };

  Canvas.prototype.centerOn = function (gx, gy) {
    this.tx = this.vw / 2 - gx * this.s;
    this.ty = this.vh / 2 - gy * this.s;
    this.apply();
  };

  Canvas.prototype.select = function (g, emit) {
    var prev = this.svg.querySelectorAll(".thx-sel");
    for (var i = 0; i < prev.length; i++) prev[i].classList.remove("thx-sel");
    if (!g) return;
    g.classList.add("thx-sel");
    var ids = idsOf(g);
    this.selected = ids[0];
    var module = ids[0].indexOf("module:") === 0;
    this.foldBtn.style.display = module ? "" : "none";
    if (emit) {
      this.root.dispatchEvent(
        new CustomEvent("thx-select", { bubbles: true, detail: { ids: ids, id: ids[0] } })
      );
    }
  };

  // Select the node or cluster standing for `id` (a BoundSymbol or module id) and bring it into
  // view: centred, or with `ifHidden` only when its centre is outside the view.
  Canvas.prototype.reveal = function (id, ifHidden) {
    var g = this.svg.querySelector("." + CSS.escape(PREFIX + encodeURIComponent(id)));
    if (!g) return false;
    this.select(g, false);
    var c = this.centreOf(g);
    var px = this.tx + (c.x - this.g.x) * this.s;
    var py = this.ty + (c.y - this.g.y) * this.s;
    if (ifHidden && px >= 0 && px <= this.vw && py >= 0 && py <= this.vh) return true;
    this.centerOn(c.x - this.g.x, c.y - this.g.y);
    return true;
  };

  Canvas.prototype.toggle = function (id) {
    var ev = new CustomEvent("thx-toggle", { bubbles: true, cancelable: true, detail: { id: id } });
    if (!this.root.dispatchEvent(ev)) return; // the widget re-lays it out
    var cls = "." + CSS.escape(PREFIX + encodeURIComponent(id));
    var cluster = this.svg.querySelector("g.cluster" + cls);
    if (cluster) this.fold(cluster);
  };

  // Fold an open module's cluster in place: what it holds is hidden, the cluster is drawn as a
  // filled box saying how many nodes it holds; edges from outside end at its border. Again: open.
  Canvas.prototype.fold = function (cluster) {
    var box = cluster.getBBox();
    var inside = function (g) {
      var b = g.getBBox();
      return b.x >= box.x - 0.5 && b.y >= box.y - 0.5 && b.x + b.width <= box.x + box.width + 0.5 &&
        b.y + b.height <= box.y + box.height + 0.5;
    };
    var folded = cluster.classList.toggle("thx-folded");
    var names = {};
    var parts = this.svg.querySelectorAll("g.node, g.cluster");
    var n = 0;
    for (var i = 0; i < parts.length; i++) {
      var g = parts[i];
      if (g === cluster || !inside(g)) continue;
      if (folded) {
        g.dataset.thxHidden = (parseInt(g.dataset.thxHidden || "0", 10) + 1).toString();
      } else {
        g.dataset.thxHidden = (parseInt(g.dataset.thxHidden || "1", 10) - 1).toString();
      }
      g.style.display = g.dataset.thxHidden !== "0" ? "none" : "";
      if (g.classList.contains("node")) {
        n += 1;
        names[g.querySelector("title").textContent] = true;
      }
    }
    var edges = this.svg.querySelectorAll("g.edge");
    for (var j = 0; j < edges.length; j++) {
      var ends = edges[j].querySelector("title").textContent.split("->");
      if (names[ends[0]] && names[ends[1]]) edges[j].style.display = folded ? "none" : "";
    }
    var note = cluster.querySelector("text.thx-fold-note");
    if (folded) {
      if (!note) {
        note = document.createElementNS("http://www.w3.org/2000/svg", "text");
        note.setAttribute("class", "thx-fold-note");
        note.setAttribute("text-anchor", "middle");
        note.setAttribute("x", box.x + box.width / 2);
        note.setAttribute("y", box.y + box.height / 2);
        note.setAttribute("font-size", "12");
        cluster.appendChild(note);
      }
      note.textContent = "\u25b8 folded: " + n + " node" + (n === 1 ? "" : "s") + " (double-click to open)";
    } else if (note) {
      note.remove();
    }
  };

  Canvas.prototype.events = function () {
    var self = this;
    var view = this.view;
    var drag = null;
    view.addEventListener(
      "wheel",
      function (e) {
        e.preventDefault();
        var r = view.getBoundingClientRect();
        var d = e.deltaMode === 1 ? e.deltaY * 16 : e.deltaY;
        self.zoomBy(Math.exp(-d * 0.0015), e.clientX - r.left, e.clientY - r.top);
      },
      { passive: false }
    );
    view.addEventListener("pointerdown", function (e) {
      if (e.button !== 0 || self.mini.contains(e.target)) return;
      drag = { x: e.clientX, y: e.clientY, tx: self.tx, ty: self.ty, moved: false, id: e.pointerId };
    });
    view.addEventListener("pointermove", function (e) {
      if (!drag) return;
      var dx = e.clientX - drag.x;
      var dy = e.clientY - drag.y;
      if (!drag.moved && Math.abs(dx) + Math.abs(dy) < 4) return;
      if (!drag.moved) {
        drag.moved = true;
        view.setPointerCapture(drag.id);
        view.classList.add("thx-cv-dragging");
      }
      self.tx = drag.tx + dx;
      self.ty = drag.ty + dy;
      self.apply();
    });
    var end = function (e) {
      if (!drag) return;
      var d = drag;
      drag = null;
      view.classList.remove("thx-cv-dragging");
      if (d.moved) {
        try {
          view.releasePointerCapture(d.id);
        } catch (err) {
          /* already released */
        }
        return;
      }
      if (e.type === "pointerup") {
        var g = hit(e.target, self.svg);
        if (g) self.select(g, true);
      }
    };
    view.addEventListener("pointerup", end);
    view.addEventListener("pointercancel", end);
    view.addEventListener("dblclick", function (e) {
      var g = hit(e.target, self.svg);
      if (!g) return;
      var id = idsOf(g)[0];
      if (id.indexOf("module:") === 0) {
        e.preventDefault();
        self.toggle(id);
      }
    });
    var minimap = function (e) {
      var r = self.mini.getBoundingClientRect();
      self.centerOn((e.clientX - r.left) / self.k, (e.clientY - r.top) / self.k);
    };
    this.mini.addEventListener("pointerdown", function (e) {
      e.stopPropagation();
      self.mini.setPointerCapture(e.pointerId);
      minimap(e);
      var move = function (ev) { minimap(ev); };
      var up = function () {
        self.mini.removeEventListener("pointermove", move);
        self.mini.removeEventListener("pointerup", up);
      };
      self.mini.addEventListener("pointermove", move);
      self.mini.addEventListener("pointerup", up);
    });
    this.root.addEventListener("keydown", function (e) {
      if (e.key === "+" || e.key === "=") self.zoomBy(1.25);
      else if (e.key === "-") self.zoomBy(0.8);
      else if (e.key === "0") self.fit();
      else return;
      e.preventDefault();
    });
    if (window.ResizeObserver) {
      new ResizeObserver(function () {
        var w = view.clientWidth;
        if (w && Math.abs(w - self.vw) > 2) {
          var c = views[self.key];
          self.vw = w;
          if (c) self.restore(c);
        }
      }).observe(view);
    }
  };

  function enhance(root) {
    if (root.dataset.thxReady) return root.thxCanvas;
    root.dataset.thxReady = "1";
    if (!root.isConnected || !root.querySelector(".thx-cv-view svg")) return null;
    new Canvas(root);
    return root.thxCanvas;
  }

  function scan(scope) {
    var found = (scope || document).querySelectorAll(".thx-canvas:not([data-thx-ready])");
    for (var i = 0; i < found.length; i++) enhance(found[i]);
  }

  // Canvases added under `scope` later (a widget's HTML replaced) are enhanced as they come.
  function watch(scope) {
    scan(scope);
    var mo = new MutationObserver(function () { scan(scope); });
    mo.observe(scope, { childList: true, subtree: true });
    return mo;
  }

  // On a page without a kernel (the report), a selected node selects its line in the tree of the
  // same pane: its folds opened, scrolled to, marked.
  document.addEventListener("thx-select", function (e) {
    if (e.defaultPrevented) return;
    var pane = e.target.closest(".pane") || e.target.closest(".thx") || document;
    var row = null;
    var rows = pane.querySelectorAll(".tree [data-id]");
    for (var i = 0; i < rows.length && !row; i++) {
      if (e.detail.ids.indexOf(rows[i].getAttribute("data-id")) >= 0) row = rows[i];
    }
    var old = pane.querySelectorAll(".thx-tree-sel");
    for (var j = 0; j < old.length; j++) old[j].classList.remove("thx-tree-sel");
    if (!row) return;
    for (var p = row.parentElement; p && p !== pane; p = p.parentElement) {
      if (p.tagName === "DETAILS") p.open = true;
    }
    row.classList.add("thx-tree-sel");
    row.scrollIntoView({ block: "nearest" });
  });

  window.thxCanvas = { enhance: enhance, scan: scan, watch: watch, idsOf: idsOf, MIN_TEXT_PX: MIN_TEXT_PX };
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", function () { scan(document); });
  } else {
    scan(document);
  }
})();
