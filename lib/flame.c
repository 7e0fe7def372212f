// SPDX-License-Identifier: MIT
/*
 * Interactive SVG flame graph: one box per (stack prefix), children merged
 * frame by frame, widths proportional to weight (the samples' periods, or
 * one per sample), titles with sample counts.  A small script (ours)
 * adds search with highlighting and a matched-% line, click-to-zoom with
 * reset, a details line, and re-cuts the labels ("…") to the new widths.
 * The URL fragment "#search=REGEX&zoom=REGEX" runs both at load time.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deferstack/deferstack.h"
#include "internal.h"
#include "output.h"

#define SVG_W 1200
#define SVG_PAD 10
#define FRAME_H 16
#define HEAD_H 44	/* title and buttons */
#define FOOT_H 24	/* details / matched line */
#define CHAR_W 7.3	/* 12px monospace advance, rounded up */
#define MIN_W 0.1	/* narrower frames are not drawn */

struct fnode {
	const char *name;	/* the fold's */
	uint32_t id;		/* its name id */
	uint64_t value, start;	/* weight, and weight left of the box */
	uint64_t samples, sstart;	/* the same in samples */
	struct fnode **kids;
	size_t nkids, ckids;
};

static void fnode_free(struct fnode *n)
{
	for (size_t i = 0; i < n->nkids; i++)
		fnode_free(n->kids[i]);
	free(n->kids);
	free(n);
}

/*
 * Compare folded stacks frame by frame: ';' sorts before every other byte,
 * so that all stacks through one frame are adjacent.  With plain strcmp
 * "main;f.cold" sorts between "main;f" and "main;f;g" ('.' < ';'), and
 * "f" was split into two boxes around "f.cold".
 */
int ds_fold_cmp_stacks(const char *a, const char *b)
{
	for (;; a++, b++) {
		unsigned char x = (unsigned char)*a, y = (unsigned char)*b;

		if (x == y) {
			if (!x)
				return 0;
			continue;
		}
		x = x == ';' ? 1 : x;
		y = y == ';' ? 1 : y;
		return x < y ? -1 : 1;
	}
}

/* ds_fold_cmp_stacks() on the frames of two stacks where they first
 * differ: names a and b, each followed by ';' (more frames) or the end. */
static int cmp_frame(const unsigned char *a, bool amore, const unsigned char *b, bool bmore)
{
	for (;; a++, b++) {
		unsigned x = *a ? *a : amore ? ';' : 0, y = *b ? *b : bmore ? ';' : 0;

		if (x == y) {
			if (!*a || !*b)
				return 0;	/* the same name: not two ids */
			continue;
		}
		x = x == ';' ? 1 : x;
		y = y == ';' ? 1 : y;
		return x < y ? -1 : 1;
	}
}

static int cmp_entry(const void *pa, const void *pb, void *arg)
{
	const struct ds_fold *f = arg;
	const struct ds_fold_entry *a = pa, *b = pb;
	size_t n = a->nr < b->nr ? a->nr : b->nr;

	for (size_t i = 0; i < n; i++) {
		if (a->ids[i] != b->ids[i])
			return cmp_frame((const unsigned char *)ds_fold_name(f, a->ids[i]),
					 i + 1 < a->nr,
					 (const unsigned char *)ds_fold_name(f, b->ids[i]),
					 i + 1 < b->nr);
	}
	return a->nr < b->nr ? -1 : a->nr > b->nr;
}

static struct fnode *fnode_child(struct fnode *n, const char *name, uint32_t id)
{
	struct fnode *c;

	/* stacks arrive in frame order: the matching child, if any, is the
	 * last one */
	if (n->nkids) {
		c = n->kids[n->nkids - 1];
		if (c->id == id)
			return c;
	}
	if (ds_grow(&n->kids, &n->ckids, n->nkids + 1, sizeof(*n->kids)))
		return NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->name = name;
	c->id = id;
	n->kids[n->nkids++] = c;
	return c;
}

/* Length of the valid UTF-8 sequence at s, 0 if invalid. */
static size_t utf8_len(const unsigned char *s)
{
	size_t n;
	uint32_t c;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2, c = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3, c = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4, c = s[0] & 0x07;
	else
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3f);
	}
	if ((n == 3 && (c < 0x800 || (c >= 0xd800 && c <= 0xdfff))) ||
	    (n == 4 && (c < 0x10000 || c > 0x10ffff)))
		return 0;
	return n;
}

void ds_xml_puts(FILE *out, const char *str, size_t max)
{
	const unsigned char *s = (const unsigned char *)str;

	for (size_t chars = 0; *s && chars < max; chars++) {
		size_t n = utf8_len(s);

		switch (*s) {
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '&': fputs("&amp;", out); break;
		case '"': fputs("&quot;", out); break;
		default:
			if (!n)
				fputc('?', out);
			else if (*s >= 0x20 && *s != 0x7f)
				fwrite(s, 1, n, out);
		}
		s += n ? n : 1;
	}
}

static size_t utf8_chars(const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t chars = 0;

	while (*s) {
		size_t n = utf8_len(s);

		s += n ? n : 1;
		chars++;
	}
	return chars;
}

/* The label of a box w pixels wide: the name, or its start and "…"; the
 * script applies the same rule after a zoom. */
static void put_label(FILE *out, const char *name, double w)
{
	size_t fit = w > 6 && w <= SVG_W ? (size_t)((w - 6) / CHAR_W) : 0;

	if (fit < 3)
		return;
	if (utf8_chars(name) <= fit) {
		ds_xml_puts(out, name, fit);
		return;
	}
	ds_xml_puts(out, name, fit - 1);
	fputs("\xe2\x80\xa6", out);	/* U+2026 HORIZONTAL ELLIPSIS */
}

/* Weights come from the recording (a period, an off-CPU time): a sum that
 * would wrap stays at the top, so that no box is wider than its parent's. */
static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return a + b < a ? UINT64_MAX : a + b;
}

static int depth_of(const struct fnode *n)
{
	int d = 0;

	for (size_t i = 0; i < n->nkids; i++) {
		int k = depth_of(n->kids[i]);

		if (k > d)
			d = k;
	}
	return d + 1;
}

static void svg_node(FILE *out, struct fnode *n, int depth, double scale, uint64_t total,
		     int bottom)
{
	double w = n->value * scale, x = SVG_PAD + n->start * scale;
	int y = bottom - (depth + 1) * FRAME_H;
	uint64_t h = ds_hash_str(n->name), start = n->start, sstart = n->sstart;

	if (w < MIN_W)
		return;
	/* data-s/data-v: weight left of the box and its weight; data-ss/data-n:
	 * the same in samples; exact for the script */
	fprintf(out, "<g data-s=\"%" PRIu64 "\" data-v=\"%" PRIu64 "\" data-ss=\"%" PRIu64
		"\" data-n=\"%" PRIu64 "\"><title>", n->start, n->value, n->sstart, n->samples);
	ds_xml_puts(out, n->name, 4096);
	fprintf(out, " (%" PRIu64 " sample%s, %.2f%%)</title>", n->samples, ds_s(n->samples),
		100.0 * (double)n->value / (double)total);
	fprintf(out, "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" "
		"fill=\"rgb(%d,%d,%d)\" rx=\"2\"/><text x=\"%.2f\" y=\"%d\">", x, y, w,
		FRAME_H - 1, 205 + (int)(h % 50), 80 + (int)((h >> 8) % 150),
		(int)((h >> 16) % 55), x + 3, y + FRAME_H - 4);
	put_label(out, n->name, w);
	fputs("</text></g>\n", out);
	for (size_t i = 0; i < n->nkids; i++) {
		n->kids[i]->start = start;
		n->kids[i]->sstart = sstart;
		svg_node(out, n->kids[i], depth + 1, scale, total, bottom);
		start = add_sat(start, n->kids[i]->value);
		sstart = add_sat(sstart, n->kids[i]->samples);
	}
}

/* The script, ours.  Frames are <g data-s data-v> with a title, a rect and
 * a text, in #frames; depth is the rect's y. */
static const char flame_js[] =
"\"use strict\";\n"
"var W, PAD = 10, CW = 7.3, total, nsamples, frames = [], zoomed = null, svg;\n"
"function el(id) { return document.getElementById(id); }\n"
"function init() {\n"
"  svg = document.documentElement;\n"
"  W = +svg.getAttribute('width');\n"
"  total = +svg.getAttribute('data-total');\n"
"  nsamples = +svg.getAttribute('data-samples');\n"
"  var gs = el('frames').getElementsByTagName('g');\n"
"  for (var i = 0; i < gs.length; i++) {\n"
"    var g = gs[i], r = g.getElementsByTagName('rect')[0];\n"
"    var info = g.getElementsByTagName('title')[0].textContent;\n"
"    var f = { g: g, r: r, t: g.getElementsByTagName('text')[0], info: info,\n"
"      name: info.replace(/ \\([0-9]+ samples?, [0-9.]+%\\)$/, ''),\n"
"      s: +g.getAttribute('data-s'), v: +g.getAttribute('data-v'),\n"
"      ss: +g.getAttribute('data-ss'), n: +g.getAttribute('data-n'),\n"
"      y: +r.getAttribute('y'), fill: r.getAttribute('fill') };\n"
"    frames.push(f);\n"
"    g.addEventListener('click', zoom.bind(null, f));\n"
"    g.addEventListener('mouseover', function (f) {\n"
"      el('details').textContent = f.info; }.bind(null, f));\n"
"    g.addEventListener('mouseout', function () { el('details').textContent = ' '; });\n"
"  }\n"
"  el('unzoom').addEventListener('click', function () { zoom(null); });\n"
"  el('search').addEventListener('click', function () {\n"
"    if (el('search').textContent === 'Search') searchPrompt(); else search(null); });\n"
"  window.addEventListener('keydown', function (e) {\n"
"    if ((e.ctrlKey || e.metaKey) && e.key === 'f') { e.preventDefault(); searchPrompt(); }\n"
"    else if (e.key === 'Escape') { search(null); zoom(null); }\n"
"  });\n"
"  window.addEventListener('hashchange', fromHash);\n"
"  fromHash();\n"
"}\n"
"function fromHash() {\n"
"  var h = location.hash.slice(1).split('&');\n"
"  for (var i = 0; i < h.length; i++) {\n"
"    var kv = h[i].split('='), v = decodeURIComponent(kv.slice(1).join('='));\n"
"    if (kv[0] === 'search') search(v);\n"
"    else if (kv[0] === 'zoom') zoomMatch(v);\n"
"  }\n"
"}\n"
"function place(f, x, w, cls) {\n"
"  f.g.setAttribute('class', cls);\n"
"  if (cls === 'hide') return;\n"
"  f.r.setAttribute('x', x.toFixed(2));\n"
"  f.r.setAttribute('width', w.toFixed(2));\n"
"  f.t.setAttribute('x', (x + 3).toFixed(2));\n"
"  var fit = w > 6 ? Math.floor((w - 6) / CW) : 0, n = Array.from(f.name);\n"
"  f.t.textContent = fit < 3 ? '' :\n"
"    n.length <= fit ? f.name : n.slice(0, fit - 1).join('') + '\\u2026';\n"
"}\n"
"function zoom(z) {\n"
"  if (z && z.s === 0 && z.v === total) z = null;\n"
"  zoomed = z;\n"
"  var s0 = z ? z.s : 0, v0 = z ? z.v : total, k = (W - 2 * PAD) / v0;\n"
"  frames.forEach(function (f) {\n"
"    if (!z || (f.y <= z.y && f.s >= s0 && f.s + f.v <= s0 + v0))\n"
"      place(f, PAD + (f.s - s0) * k, f.v * k, (f.v * k < 0.1) ? 'hide' : '');\n"
"    else if (f.y > z.y && f.s <= s0 && f.s + f.v >= s0 + v0)\n"
"      place(f, PAD, W - 2 * PAD, 'parent');\n"
"    else\n"
"      place(f, 0, 0, 'hide');\n"
"  });\n"
"  el('unzoom').setAttribute('class', z ? 'btn' : 'btn hide');\n"
"}\n"
"function zoomMatch(re) {\n"
"  var rx = toRe(re), best = null;\n"
"  if (!rx) return;\n"
"  frames.forEach(function (f) {\n"
"    if (rx.test(f.name) && (!best || f.v > best.v)) best = f; });\n"
"  if (best) zoom(best);\n"
"}\n"
"function toRe(re) {\n"
"  try { return new RegExp(re); } catch (e) {\n"
"    el('matched').textContent = 'Bad regular expression: ' + re; return null; }\n"
"}\n"
"function searchPrompt() {\n"
"  var re = prompt('Search frames (regular expression):', '');\n"
"  if (re) search(re);\n"
"}\n"
"/* the weight (or samples) of the union of the boxes' ranges */\n"
"function covered(iv, s, v) {\n"
"  var m = 0, end = -1;\n"
"  iv.slice().sort(function (a, b) { return a[s] - b[s]; }).forEach(function (f) {\n"
"    var b = Math.max(f[s], end), e = f[s] + f[v];\n"
"    if (e > b) { m += e - b; end = e; } });\n"
"  return m;\n"
"}\n"
"function search(re) {\n"
"  var iv = [], rx = re ? toRe(re) : null;\n"
"  frames.forEach(function (f) {\n"
"    var hit = rx !== null && rx.test(f.name);\n"
"    f.r.setAttribute('fill', hit ? 'rgb(230,0,230)' : f.fill);\n"
"    if (hit) { f.r.setAttribute('class', 'match'); iv.push(f); }\n"
"    else f.r.removeAttribute('class');\n"
"  });\n"
"  if (!rx) {\n"
"    if (!re) el('matched').textContent = ' ';\n"
"    el('search').textContent = 'Search'; return;\n"
"  }\n"
"  var m = covered(iv, 's', 'v'), n = covered(iv, 'ss', 'n');\n"
"  el('matched').textContent = 'Matched: ' + (total ? 100 * m / total : 0).toFixed(2) +\n"
"    '% (' + n + ' of ' + nsamples + (nsamples == 1 ? ' sample, ' : ' samples, ') +\n"
"    iv.length + (iv.length == 1 ? ' frame)' : ' frames)');\n"
"  el('search').textContent = 'Reset Search';\n"
"}\n";

int ds_fold_write_svg(const struct ds_fold *f, FILE *out, const char *title)
{
	size_t nr = 0;
	struct ds_fold_entry *v = ds_fold_entries(f, &nr);
	struct fnode *root = calloc(1, sizeof(*root));
	int err = 0, height, bottom;
	double scale;

	if (!v || !root) {
		err = -ENOMEM;
		goto out;
	}
	root->name = "all";
	root->id = UINT32_MAX;
	qsort_r(v, nr, sizeof(*v), cmp_entry, (void *)f);
	for (size_t i = 0; i < nr && !err; i++) {
		struct fnode *n = root;

		root->value = add_sat(root->value, v[i].count);
		root->samples = add_sat(root->samples, v[i].samples);
		for (size_t k = 0; k < v[i].nr; k++) {
			n = fnode_child(n, ds_fold_name(f, v[i].ids[k]), v[i].ids[k]);
			if (!n) {
				err = -ENOMEM;
				break;
			}
			n->value = add_sat(n->value, v[i].count);
			n->samples = add_sat(n->samples, v[i].samples);
		}
	}
	if (err)
		goto out;
	height = HEAD_H + depth_of(root) * FRAME_H + FOOT_H;
	bottom = height - FOOT_H;
	scale = root->value ? (SVG_W - 2.0 * SVG_PAD) / (double)root->value : 0;
	fprintf(out, "<?xml version=\"1.0\" standalone=\"no\"?>\n"
		"<svg version=\"1.1\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
		"data-total=\"%" PRIu64 "\" data-samples=\"%" PRIu64 "\" onload=\"init()\" "
		"xmlns=\"http://www.w3.org/2000/svg\">\n"
		"<style>text{font-family:monospace;font-size:12px;fill:#000}"
		"#frames g{cursor:pointer}#frames rect:hover{stroke:#000;stroke-width:0.5}"
		".hide{display:none}.parent{opacity:0.5}"
		".btn{cursor:pointer;fill:#1a5fb4}.btn:hover{text-decoration:underline}"
		"</style>\n<script type=\"text/ecmascript\"><![CDATA[\n%s]]></script>\n"
		"<rect x=\"0\" y=\"0\" width=\"100%%\" height=\"100%%\" fill=\"#f8f8f0\"/>\n"
		"<text id=\"title\" x=\"%d\" y=\"20\" style=\"font-size:16px\">",
		SVG_W, height, SVG_W, height, root->value, root->samples, flame_js, SVG_PAD);
	ds_xml_puts(out, title ? title : "Flame Graph", 200);
	fprintf(out, " (%" PRIu64 " sample%s)</text>\n"
		"<text id=\"unzoom\" class=\"btn hide\" x=\"%d\" y=\"38\">Reset Zoom</text>\n"
		"<text id=\"search\" class=\"btn\" x=\"%d\" y=\"38\" "
		"text-anchor=\"end\">Search</text>\n"
		"<text id=\"details\" x=\"%d\" y=\"%d\"> </text>\n"
		"<text id=\"matched\" x=\"%d\" y=\"%d\" text-anchor=\"end\"> </text>\n"
		"<g id=\"frames\">\n", root->samples, ds_s(root->samples), SVG_PAD, SVG_W - SVG_PAD, SVG_PAD,
		height - 8, SVG_W - SVG_PAD, height - 8);
	if (root->value)
		svg_node(out, root, 0, scale, root->value, bottom);
	fprintf(out, "</g>\n</svg>\n");
	err = ds_stream_err(out);
out:
	free(v);
	if (root)
		fnode_free(root);
	return err;
}
