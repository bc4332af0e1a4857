/* export_flamegraph.c - a self-contained SVG flame graph (see export.h).
 *
 * The samples are sorted by stack (comm, then frames root first), so equal
 * prefixes are adjacent and the prefix tree is built by comparing each frame
 * with the last child of its parent only. The tree is laid out left to right
 * in that (alphabetical) order, root at the bottom, a frame's width being
 * plot_width * samples / total. The inline script reads the geometry back
 * from the rects and does zoom and search on the client. */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "export.h"

#define PAD_X 10
#define PAD_TOP 60
#define PAD_BOTTOM 30
#define FRAME_H 16
#define CHAR_W 7.0	/* generous width of an 11 px monospace glyph */
#define MIN_W 0.1	/* frames narrower than this are left out */

enum { K_ALL, K_COMM, K_FRAME };

struct node {
	const char *name, *module;
	uint64_t total;
	uint32_t first_child, next, last_child; /* 0 = none (node 0 is the root) */
	uint16_t depth;
	uint8_t kind;
	bool kernel, inlined;
};

struct tree {
	struct node *n;
	size_t len, cap;
};

static const char *name_or_unknown(const char *s) { return s && *s ? s : "[unknown]"; }
static const char *module_of(const struct qp_cpu_frame *f) { return f->module ? f->module : ""; }

/* ---- UTF-8 / XML ---- */

static bool cont(unsigned char c) { return (c & 0xC0) == 0x80; }

size_t qp_utf8_seq_len(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];

	if (!n)
		return 0;
	if (c < 0x80)
		return (c < 0x20 && c != '\t' && c != '\n' && c != '\r') ? 0 : 1;
	if (c >= 0xC2 && c <= 0xDF)
		return n >= 2 && cont(s[1]) ? 2 : 0;
	if (c >= 0xE0 && c <= 0xEF) {
		unsigned char lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;

		if (n < 3 || s[1] < lo || s[1] > hi || !cont(s[2]))
			return 0;
		if (c == 0xEF && s[1] == 0xBF && (s[2] == 0xBE || s[2] == 0xBF))
			return 0; /* U+FFFE, U+FFFF: not XML characters */
		return 3;
	}
	if (c >= 0xF0 && c <= 0xF4) {
		unsigned char lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;

		return n >= 4 && s[1] >= lo && s[1] <= hi && cont(s[2]) && cont(s[3]) ? 4 : 0;
	}
	return 0;
}

/* Characters in s once sanitized (an invalid byte is one U+FFFD). */
static size_t xml_chars(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s), i = 0, chars = 0, l;

	while (i < n) {
		l = qp_utf8_seq_len(p + i, n - i);
		i += l ? l : 1;
		chars++;
	}
	return chars;
}

/* Append at most max characters of s, escaped for text and attributes;
 * newlines and tabs become spaces (one-line labels). */
static void xml_put_n(struct qp_buf *b, const char *s, size_t max)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s), i = 0, chars = 0, l;

	while (i < n && chars < max) {
		l = qp_utf8_seq_len(p + i, n - i);
		chars++;
		if (!l) {
			qp_buf_puts(b, "\xEF\xBF\xBD");
			i++;
			continue;
		}
		switch (p[i]) {
		case '&': qp_buf_puts(b, "&amp;"); break;
		case '<': qp_buf_puts(b, "&lt;"); break;
		case '>': qp_buf_puts(b, "&gt;"); break;
		case '"': qp_buf_puts(b, "&quot;"); break;
		case '\'': qp_buf_puts(b, "&apos;"); break;
		case '\n': case '\r': case '\t': qp_buf_add(b, " ", 1); break;
		default: qp_buf_add(b, p + i, l);
		}
		i += l;
	}
}

static void xml_put(struct qp_buf *b, const char *s) { xml_put_n(b, s, (size_t)-1); }

/* ---- the tree ---- */

static int frame_cmp(const struct qp_cpu_frame *a, const struct qp_cpu_frame *b)
{
	int c = strcmp(name_or_unknown(a->name), name_or_unknown(b->name));

	if (c)
		return c;
	if (a->kernel != b->kernel)
		return a->kernel ? 1 : -1;
	if (a->inlined != b->inlined)
		return a->inlined ? 1 : -1;
	return strcmp(module_of(a), module_of(b));
}

static int sample_cmp(const void *pa, const void *pb)
{
	const struct qp_cpu_sample *a = *(const struct qp_cpu_sample *const *)pa;
	const struct qp_cpu_sample *b = *(const struct qp_cpu_sample *const *)pb;
	size_t i;
	int c = strcmp(name_or_unknown(a->comm), name_or_unknown(b->comm));

	if (c)
		return c;
	for (i = 0; i < a->nframes && i < b->nframes; i++) {
		c = frame_cmp(&a->frames[i], &b->frames[i]);
		if (c)
			return c;
	}
	return a->nframes < b->nframes ? -1 : a->nframes > b->nframes;
}

static int64_t tree_add(struct tree *t)
{
	if (t->len == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 256;
		struct node *n = realloc(t->n, cap * sizeof(*n));

		if (!n || t->len >= UINT32_MAX)
			return -1;
		t->n = n;
		t->cap = cap;
	}
	memset(&t->n[t->len], 0, sizeof(t->n[0]));
	return (int64_t)t->len++;
}

/* The child of parent for (name, module, kernel, inlined, kind): the last
 * child when it matches (input is sorted), else a new last child. -1 on OOM. */
static int64_t child(struct tree *t, uint32_t parent, const char *name, const char *module,
		     bool kernel, bool inlined, uint8_t kind)
{
	uint32_t last = t->n[parent].last_child;
	int64_t c;

	if (last) {
		struct node *l = &t->n[last];

		if (l->kernel == kernel && l->inlined == inlined && strcmp(l->name, name) == 0 &&
		    strcmp(l->module, module) == 0)
			return last;
	}
	c = tree_add(t);
	if (c < 0)
		return -1;
	t->n[c].name = name;
	t->n[c].module = module;
	t->n[c].kernel = kernel;
	t->n[c].inlined = inlined;
	t->n[c].kind = kind;
	t->n[c].depth = t->n[parent].depth < UINT16_MAX ? t->n[parent].depth + 1 : UINT16_MAX;
	if (last)
		t->n[last].next = (uint32_t)c;
	else
		t->n[parent].first_child = (uint32_t)c;
	t->n[parent].last_child = (uint32_t)c;
	return c;
}

static int build_tree(const struct qp_cpu_profile *p, struct tree *t)
{
	const struct qp_cpu_sample **order;
	size_t i, j, n = 0;
	int ret = 0;

	order = calloc(p->nsamples ? p->nsamples : 1, sizeof(*order));
	if (!order || tree_add(t) < 0) {
		free(order);
		return -ENOMEM;
	}
	t->n[0].name = "all";
	t->n[0].module = "";
	t->n[0].kind = K_ALL;
	for (i = 0; i < p->nsamples; i++)
		if (p->samples[i].count)
			order[n++] = &p->samples[i];
	qsort(order, n, sizeof(*order), sample_cmp);
	for (i = 0; i < n && !ret; i++) {
		const struct qp_cpu_sample *s = order[i];
		int64_t cur = child(t, 0, name_or_unknown(s->comm), "", false, false, K_COMM);

		t->n[0].total += s->count;
		for (j = 0; cur >= 0; j++) {
			t->n[cur].total += s->count;
			if (j == s->nframes)
				break;
			cur = child(t, (uint32_t)cur, name_or_unknown(s->frames[j].name),
				    module_of(&s->frames[j]), s->frames[j].kernel, s->frames[j].inlined,
				    K_FRAME);
		}
		if (cur < 0)
			ret = -ENOMEM;
	}
	free(order);
	return ret;
}

/* ---- colours ---- */

static uint32_t fnv1a(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

static void hsl_rgb(double h, double s, double l, int rgb[3])
{
	double c = (1 - (2 * l > 1 ? 2 * l - 1 : 1 - 2 * l)) * s;
	int k = (int)(h / 60.0) % 6;
	double f = h / 60.0 - (int)(h / 60.0), x = c * (k % 2 ? 1 - f : f), m = l - c / 2;
	double r = 0, g = 0, b = 0;

	switch (k) {
	case 0: r = c; g = x; break;
	case 1: r = x; g = c; break;
	case 2: g = c; b = x; break;
	case 3: g = x; b = c; break;
	case 4: r = x; b = c; break;
	default: r = c; b = x; break;
	}
	rgb[0] = (int)((r + m) * 255 + 0.5);
	rgb[1] = (int)((g + m) * 255 + 0.5);
	rgb[2] = (int)((b + m) * 255 + 0.5);
}

static void put_fill(struct qp_buf *b, const struct node *n, bool by_module)
{
	double v = (fnv1a(n->name) % 1000) / 1000.0; /* per-name variation */
	int rgb[3];

	if (n->kind == K_ALL) {
		rgb[0] = rgb[1] = rgb[2] = 200;
	} else if (n->kind == K_COMM) {
		rgb[0] = 150 + (int)(40 * v);
		rgb[1] = 170 + (int)(40 * v);
		rgb[2] = 210;
	} else if (by_module) {
		hsl_rgb((double)(fnv1a(n->module) % 360), 0.55, 0.62 + 0.1 * v, rgb);
	} else if (n->kernel) { /* kernel: orange */
		rgb[0] = 230;
		rgb[1] = 120 + (int)(60 * v);
		rgb[2] = 30;
	} else { /* user: warm red to yellow */
		rgb[0] = 205 + (int)(50 * v);
		rgb[1] = (int)(210 * v);
		rgb[2] = (int)(55 * v);
	}
	qp_buf_printf(b, "rgb(%d,%d,%d)", rgb[0], rgb[1], rgb[2]);
}

/* ---- output ---- */

static const char STYLE[] =
	"<style type=\"text/css\">\n"
	"text{font-family:'DejaVu Sans Mono',Menlo,Consolas,monospace;font-size:11px;fill:#000}\n"
	"#title{font-size:17px;text-anchor:middle}\n"
	"#subtitle{font-size:12px;text-anchor:middle;fill:#555}\n"
	"#search,#reset{cursor:pointer;font-size:12px}\n"
	"#search{text-anchor:end}#matched{text-anchor:end;font-size:12px}\n"
	"#details{font-size:12px}\n"
	".hide{display:none}.par{opacity:0.5}\n"
	".f{cursor:pointer}.f:hover rect{stroke:#000;stroke-width:0.5}\n"
	".f text{pointer-events:none}\n"
	"</style>\n";

/* Zoom and search on the client. The frames' original geometry is read from
 * the rects at load; names come from the <title> ("NAME (N samples, X%)"). */
static const char SCRIPT[] =
	"<script type=\"text/ecmascript\"><![CDATA[\n"
	"'use strict';\n"
	"var F=[],PAD=10,FW=0,CW=7,det,mat,rst,srch,zoomed=null,term=null;\n"
	"function $(id){return document.getElementById(id);}\n"
	"function fit(o,w){var n=Math.floor((w-6)/CW),s=o.name;\n"
	" if(n<3)s='';else if(s.length>n)s=s.substring(0,n-2)+'..';o.t.textContent=s;}\n"
	"function place(o,x,w){o.r.setAttribute('x',x.toFixed(2));o.r.setAttribute('width',w.toFixed(2));\n"
	" o.t.setAttribute('x',(x+3).toFixed(2));fit(o,w);}\n"
	"function init(evt){det=$('details');mat=$('matched');rst=$('reset');srch=$('search');\n"
	" FW=+document.documentElement.getAttribute('width')-2*PAD;\n"
	" var gs=$('frames').getElementsByTagName('g');\n"
	" for(var i=0;i<gs.length;i++){var g=gs[i],ti=g.getElementsByTagName('title')[0].textContent;\n"
	"  var o={g:g,r:g.getElementsByTagName('rect')[0],t:g.getElementsByTagName('text')[0],\n"
	"   name:ti.substring(0,ti.lastIndexOf(' (')),info:ti};\n"
	"  o.x=+o.r.getAttribute('x');o.w=+o.r.getAttribute('width');o.y=+o.r.getAttribute('y');\n"
	"  o.fill=o.r.getAttribute('fill');F.push(o);\n"
	"  (function(o){g.addEventListener('click',function(){zoom(o);});\n"
	"   g.addEventListener('mouseover',function(){det.textContent=o.info;});\n"
	"   g.addEventListener('mouseout',function(){det.textContent=' ';});})(o);}\n"
	" rst.addEventListener('click',unzoom);srch.addEventListener('click',function(){\n"
	"  if(term!==null)clearSearch();else search();});\n"
	" window.addEventListener('keydown',function(e){\n"
	"  if((e.ctrlKey&&(e.key==='f'||e.keyCode===70))||e.key==='/'){e.preventDefault();search();}\n"
	"  else if(e.key==='Escape'){unzoom();clearSearch();}});}\n"
	"function zoom(f){var e=0.0001,s=FW/f.w;zoomed=f;rst.setAttribute('class','');\n"
	" for(var i=0;i<F.length;i++){var o=F[i];o.g.setAttribute('class','f');\n"
	"  if(o.y>f.y){if(o.x<=f.x+e&&o.x+o.w>=f.x+f.w-e){o.g.setAttribute('class','f par');place(o,PAD,FW);}\n"
	"   else o.g.setAttribute('class','f hide');}\n"
	"  else if(o.x>=f.x-e&&o.x+o.w<=f.x+f.w+e)place(o,PAD+(o.x-f.x)*s,o.w*s);\n"
	"  else o.g.setAttribute('class','f hide');}\n"
	" if(term!==null)showMatch();}\n"
	"function unzoom(){zoomed=null;rst.setAttribute('class','hide');\n"
	" for(var i=0;i<F.length;i++){var o=F[i];o.g.setAttribute('class','f');place(o,o.x,o.w);}\n"
	" if(term!==null)showMatch();}\n"
	"function search(){var t=prompt('Search for (regular expression):',term===null?'':term);\n"
	" if(t===null||t==='')return;try{new RegExp(t);}catch(err){alert('Bad regular expression: '+err);return;}\n"
	" term=t;srch.textContent='Reset Search';showMatch();}\n"
	"function clearSearch(){term=null;srch.textContent='Search';mat.textContent=' ';\n"
	" for(var i=0;i<F.length;i++)F[i].r.setAttribute('fill',F[i].fill);}\n"
	"function showMatch(){var re=new RegExp(term),m=[],x0=0,x1=FW;\n"
	" if(zoomed){x0=zoomed.x;x1=zoomed.x+zoomed.w;}\n"
	" for(var i=0;i<F.length;i++){var o=F[i];\n"
	"  if(re.test(o.name)){o.r.setAttribute('fill','rgb(230,0,230)');\n"
	"   if(o.x>=x0-0.0001&&o.x+o.w<=x1+0.0001)m.push(o);}\n"
	"  else o.r.setAttribute('fill',o.fill);}\n"
	" m.sort(function(a,b){return a.x-b.x||b.w-a.w;});\n"
	" var sum=0,end=-1;for(var j=0;j<m.length;j++){var a=m[j].x,b=m[j].x+m[j].w;\n"
	"  if(b<=end)continue;sum+=b-Math.max(a,end);end=b;}\n"
	" var tot=zoomed?zoomed.w:FW;mat.textContent='Matched: '+(tot>0?100*sum/tot:0).toFixed(2)+'%';}\n"
	"]]></script>\n";

struct ctx {
	const struct tree *t;
	struct qp_buf *b;
	uint64_t total;
	double plot_w;
	int base_y;	/* y of the root frame */
	bool by_module;
	const char *unit;	/* of the counts: "samples", "bytes", "ns" off the CPU */
};

/* The frame's label: its name, kernel frames suffixed "_[k]", inlined
 * ones "_[i]" (as in folded stacks). */
static void put_label(struct qp_buf *b, const struct node *n, size_t max)
{
	const char *sfx = n->kind != K_FRAME ? NULL : n->kernel ? "_[k]" : n->inlined ? "_[i]" : NULL;
	size_t len = xml_chars(n->name) + (sfx ? 4 : 0);

	if (len <= max) {
		xml_put(b, n->name);
		if (sfx)
			qp_buf_puts(b, sfx);
	} else if (max >= 3) {
		xml_put_n(b, n->name, max - 2); /* the suffix is always cut first */
		qp_buf_puts(b, "..");
	}
}

static void put_frame(struct ctx *c, const struct node *n, double x, double w)
{
	size_t maxc = w > 6 ? (size_t)((w - 6) / CHAR_W) : 0;
	double y = c->base_y - (double)n->depth * FRAME_H;

	qp_buf_puts(c->b, "<g class=\"f\"><title>");
	put_label(c->b, n, (size_t)-1);
	qp_buf_printf(c->b, " (%" PRIu64 " %s, %.2f%%)</title>", n->total, c->unit,
		      100.0 * (double)n->total / (double)c->total);
	qp_buf_printf(c->b, "<rect x=\"%.2f\" y=\"%.0f\" width=\"%.2f\" height=\"%d\" fill=\"", x, y, w,
		      FRAME_H - 1);
	put_fill(c->b, n, c->by_module);
	qp_buf_printf(c->b, "\" rx=\"2\" ry=\"2\"/><text x=\"%.2f\" y=\"%.1f\">", x + 3, y + 11.5);
	if (maxc >= 3)
		put_label(c->b, n, maxc);
	qp_buf_puts(c->b, "</text></g>\n");
}

/* Depth-first, children left to right from the parent's x. Iterative: a
 * stack walk of thousands of frames must not blow the C stack. */
static void put_frames(struct ctx *c)
{
	const struct tree *t = c->t;
	uint64_t *off = calloc(t->len, sizeof(*off)); /* samples left of the node */
	uint32_t *stack = calloc(t->len, sizeof(*stack));
	size_t sp = 0;

	if (!off || !stack) {
		c->b->failed = true;
		goto out;
	}
	stack[sp++] = 0;
	while (sp) {
		uint32_t i = stack[--sp], ch;
		const struct node *n = &t->n[i];
		double x = PAD_X + c->plot_w * (double)off[i] / (double)c->total;
		double w = c->plot_w * (double)n->total / (double)c->total;
		uint64_t o = off[i];
		size_t first = sp;

		if (w < MIN_W)
			continue;
		put_frame(c, n, x, w);
		for (ch = n->first_child; ch; ch = t->n[ch].next) {
			off[ch] = o;
			o += t->n[ch].total;
			stack[sp++] = ch;
		}
		/* pop in left-to-right order */
		for (size_t a = first, b = sp ? sp - 1 : 0; a < b; a++, b--) {
			uint32_t tmp = stack[a];

			stack[a] = stack[b];
			stack[b] = tmp;
		}
	}
out:
	free(off);
	free(stack);
}

static void put_header(struct qp_buf *b, int w, int h, bool script)
{
	qp_buf_puts(b, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n");
	qp_buf_printf(b,
		      "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" "
		      "height=\"%d\" viewBox=\"0 0 %d %d\"%s>\n",
		      w, h, w, h, script ? " onload=\"init(evt)\"" : "");
	qp_buf_puts(b, "<defs><linearGradient id=\"bg\" x1=\"0\" y1=\"0\" x2=\"0\" y2=\"1\">"
		       "<stop stop-color=\"#eeeeee\" offset=\"5%\"/>"
		       "<stop stop-color=\"#eeeeb0\" offset=\"95%\"/></linearGradient></defs>\n");
	qp_buf_puts(b, STYLE);
	if (script)
		qp_buf_puts(b, SCRIPT);
	qp_buf_printf(b, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"url(#bg)\"/>\n", w, h);
}

static void put_titles(struct qp_buf *b, int w, const char *title, const char *subtitle)
{
	qp_buf_printf(b, "<text id=\"title\" x=\"%d\" y=\"24\">", w / 2);
	xml_put(b, title);
	qp_buf_printf(b, "</text>\n<text id=\"subtitle\" x=\"%d\" y=\"44\">", w / 2);
	xml_put(b, subtitle);
	qp_buf_puts(b, "</text>\n");
}

int qp_export_flamegraph(const struct qp_cpu_profile *p, const struct qp_flame_opts *o,
			 struct qp_buf *out)
{
	static const struct qp_flame_opts defaults;
	struct tree t = { 0 };
	struct ctx c = { 0 };
	const char *title, *subtitle;
	char sub[160];
	int w, h, ret, maxdepth = 0;
	size_t i;

	if (!o)
		o = &defaults;
	w = o->width ? o->width : 1200;
	w = w < 200 ? 200 : w > 100000 ? 100000 : w;
	title = o->title ? o->title : p->title ? p->title : "Flame Graph";
	ret = build_tree(p, &t);
	if (ret)
		goto out;
	c.total = t.n[0].total;
	c.unit = p->unit ? p->unit : p->off_cpu ? "ns" : "samples";
	if (o->subtitle) {
		subtitle = o->subtitle;
	} else {
		int n = snprintf(sub, sizeof(sub), "%" PRIu64 " %s", c.total,
				 p->off_cpu ? "ns off the CPU" : c.unit);

		if (p->duration_ns && n > 0 && (size_t)n < sizeof(sub))
			snprintf(sub + n, sizeof(sub) - (size_t)n, " in %.2f s",
				 (double)p->duration_ns / 1e9);
		subtitle = sub;
	}
	if (!c.total) {
		h = 140;
		put_header(out, w, h, false);
		put_titles(out, w, title, subtitle);
		qp_buf_printf(out,
			      "<text id=\"nosamples\" x=\"%d\" y=\"96\" style=\"font-size:16px;"
			      "text-anchor:middle;fill:#888\">no samples</text>\n</svg>\n",
			      w / 2);
		goto out;
	}
	c.plot_w = w - 2 * PAD_X;
	for (i = 0; i < t.len; i++) /* depth of the frames that will be drawn */
		if (c.plot_w * (double)t.n[i].total / (double)c.total >= MIN_W &&
		    t.n[i].depth > maxdepth)
			maxdepth = t.n[i].depth;
	h = PAD_TOP + (maxdepth + 1) * FRAME_H + PAD_BOTTOM;
	c.t = &t;
	c.b = out;
	c.base_y = h - PAD_BOTTOM - FRAME_H;
	c.by_module = o->color_by_module;
	put_header(out, w, h, true);
	put_titles(out, w, title, subtitle);
	qp_buf_printf(out, "<text id=\"reset\" class=\"hide\" x=\"%d\" y=\"24\">Reset Zoom</text>\n",
		      PAD_X);
	qp_buf_printf(out, "<text id=\"search\" x=\"%d\" y=\"24\">Search</text>\n", w - PAD_X);
	qp_buf_printf(out, "<text id=\"details\" x=\"%d\" y=\"%d\"> </text>\n", PAD_X, h - 10);
	qp_buf_printf(out, "<text id=\"matched\" x=\"%d\" y=\"%d\"> </text>\n", w - PAD_X, h - 10);
	qp_buf_puts(out, "<g id=\"frames\">\n");
	put_frames(&c);
	qp_buf_puts(out, "</g>\n</svg>\n");
out:
	free(t.n);
	if (!ret && out->failed)
		ret = -ENOMEM;
	return ret;
}
