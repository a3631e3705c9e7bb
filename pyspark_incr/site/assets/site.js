// Draws every <svg class="incr-graph"> of a page from the JSON beside it (<script type="application/json"
// id="..."> named by the svg's data-graph). pyspark_incr/site/graph.py lays the nodes out; this only draws:
// one <path class="edge"> per edge, one <g class="node" data-model="..."> per node, parents left.
// No libraries, nothing fetched: the site opens from a file system.
(function () {
  "use strict";
  var SVG = "http://www.w3.org/2000/svg";

  function el(name, attrs, parent) {
    var node = document.createElementNS(SVG, name);
    Object.keys(attrs).forEach(function (key) { node.setAttribute(key, attrs[key]); });
    parent.appendChild(node);
    return node;
  }

  function edgePath(a, b, w, h) {
    var x1 = a.x + w, y1 = a.y + h / 2, x2 = b.x, y2 = b.y + h / 2, mid = (x1 + x2) / 2;
    return "M" + x1 + "," + y1 + " C" + mid + "," + y1 + " " + mid + "," + y2 + " " + x2 + "," + y2;
  }

  function drawNode(n, w, h, parent) {
    var node = el("g", {"class": "node", "data-model": n.name, "data-kind": n.kind || "",
                        transform: "translate(" + n.x + "," + n.y + ")"}, parent);
    if (n.focus) { node.setAttribute("data-focus", "true"); }
    // textContent, never markup: a model name is data
    var holder = n.href ? el("a", {href: n.href}, node) : node;
    el("title", {}, holder).textContent = n.name + (n.kind ? " (" + n.kind + ")" : "");
    el("rect", {width: w, height: h, rx: 4, ry: 4}, holder);
    el("text", {x: 8, y: h / 2, "dominant-baseline": "central"}, holder).textContent = n.label;
  }

  function draw(svg) {
    var id = svg.getAttribute("data-graph");
    var source = document.getElementById(id);
    if (!source) { throw new Error("pyspark-incr site: no graph data #" + id); }
    var g = JSON.parse(source.textContent);
    var width = Math.max(g.width, 1), height = Math.max(g.height, 1);
    svg.setAttribute("viewBox", "0 0 " + width + " " + height);
    svg.setAttribute("width", width);
    svg.setAttribute("height", height);
    var edges = el("g", {"class": "edges"}, svg);
    g.edges.forEach(function (e) {
      el("path", {"class": "edge", d: edgePath(g.nodes[e[0]], g.nodes[e[1]], g.node_w, g.node_h)}, edges);
    });
    var nodes = el("g", {"class": "nodes"}, svg);
    g.nodes.forEach(function (n) { drawNode(n, g.node_w, g.node_h, nodes); });
  }

  function drawAll() {
    Array.prototype.forEach.call(document.querySelectorAll("svg.incr-graph"), draw);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", drawAll);
  } else {
    drawAll();
  }
}());
