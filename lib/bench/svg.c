/*
 * svg.c - the speedup, throughput and memory plot as SVG (see svg.h).
 *
 * Coordinates: each panel maps data (x, y) to pixels with px() / py() of a
 * struct panel; y grows upwards in data, downwards in SVG. Series are
 * numbered once (struct legend) and keep their colour in every panel.
 * Rows of different dtypes are different series, each from its own
 * 1-device point; the dtype is named when a row ran in another than fp32
 * (mgpu_bench_show_dtype).
 */
#include "bench/svg.h"

#include <math.h>   /* pow, floor, log10, isfinite, fabs */
#include <string.h> /* strcmp */

#include "core/err.h" /* mgpu_err */

#define W 1380
#define H 470
#define PY0 80      /* top of the panels */
#define PH 300      /* their height */
#define LEGEND_X 1150
#define ONE_DEV "#7f7f7f" /* 1-device configurations: no series colour */
#define MAX_SERIES 8

/* no grey: that is the 1-device configurations' */
static const char *const colors[MAX_SERIES] = { "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
						"#9467bd", "#8c564b", "#e377c2", "#17becf" };

struct panel {
	double x0, y0, w, h;      /* pixel box (top left, size) */
	double xmin, xmax, ymax;  /* data range (y from 0) */
};

/* The series of the plot: the first multi-device row of each, in order. */
struct legend {
	int first[MAX_SERIES];
	int n;
	int dtype;                /* name the dtype (mgpu_bench_show_dtype) */
};

static double px(const struct panel *p, double x)
{
	return p->x0 + (x - p->xmin) / (p->xmax - p->xmin) * p->w;
}

static double py(const struct panel *p, double y)
{
	return p->y0 + p->h - y / p->ymax * p->h;
}

/* A 1, 2 or 5 x 10^k step giving about n ticks up to max. */
static double nice_step(double max, int n)
{
	double raw = max / n, mag = pow(10, floor(log10(raw))), f = raw / mag;

	return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
}

/* 1500 -> "1.5k", 2e6 -> "2M": tick labels that fit. */
static void short_num(double v, char *buf, size_t cap)
{
	if (fabs(v) >= 1e9)
		snprintf(buf, cap, "%gG", v / 1e9);
	else if (fabs(v) >= 1e6)
		snprintf(buf, cap, "%gM", v / 1e6);
	else if (fabs(v) >= 1e4)
		snprintf(buf, cap, "%gk", v / 1e3);
	else
		snprintf(buf, cap, "%g", v);
}

static void esc(FILE *fp, const char *s)
{
	for (; *s; s++) {
		if (*s == '<')
			fputs("&lt;", fp);
		else if (*s == '>')
			fputs("&gt;", fp);
		else if (*s == '&')
			fputs("&amp;", fp);
		else if (*s == '"')
			fputs("&quot;", fp);
		else
			fputc(*s, fp);
	}
}

static void text(FILE *fp, double x, double y, const char *anchor, int size, const char *s)
{
	fprintf(fp, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" font-size=\"%d\">", x, y,
		anchor, size);
	esc(fp, s);
	fputs("</text>\n", fp);
}

/* Axes box, horizontal grid lines and y tick labels, titles. */
static void frame(FILE *fp, const struct panel *p, const char *title, const char *xlabel,
		  const char *ylabel)
{
	double step = nice_step(p->ymax, 5), y;
	char buf[32];

	for (y = 0; y <= p->ymax + 1e-9; y += step) {
		fprintf(fp, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n",
			p->x0, py(p, y), p->x0 + p->w, py(p, y));
		short_num(y, buf, sizeof buf);
		text(fp, p->x0 - 6, py(p, y) + 4, "end", 11, buf);
	}
	fprintf(fp, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
		"stroke=\"#333\"/>\n", p->x0, p->y0, p->w, p->h);
	text(fp, p->x0 + p->w / 2, p->y0 - 12, "middle", 14, title);
	text(fp, p->x0 + p->w / 2, p->y0 + p->h + 38, "middle", 12, xlabel);
	fprintf(fp, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"12\" "
		"transform=\"rotate(-90 %.1f %.1f)\">%s</text>\n", p->x0 - 48, p->y0 + p->h / 2,
		p->x0 - 48, p->y0 + p->h / 2, ylabel);
}

static void x_ticks(FILE *fp, const struct panel *p)
{
	char buf[16];
	int i;

	for (i = 1; i <= (int)p->xmax; i++) {
		snprintf(buf, sizeof buf, "%d", i);
		text(fp, px(p, i), p->y0 + p->h + 16, "middle", 11, buf);
	}
}

static int same_series(const struct mgpu_bench_trow *a, const struct mgpu_bench_trow *b)
{
	return strcmp(a->kind, b->kind) == 0 && strcmp(a->mode, b->mode) == 0 &&
	       strcmp(a->sync, b->sync) == 0 && strcmp(a->dtype, b->dtype) == 0;
}

static int ok_row(const struct mgpu_bench_trow *r)
{
	return !r->error[0] && isfinite(r->samples_per_s);
}

/* Does row r belong on the line of the series that starts at row f: one
 * of its multi-device rows, or the 1-device row of its kind and dtype. */
static int on_line(const struct mgpu_bench_trow *r, const struct mgpu_bench_trow *f)
{
	if (!ok_row(r))
		return 0;
	if (r->devices > 1)
		return same_series(r, f);
	return strcmp(r->kind, f->kind) == 0 && strcmp(r->dtype, f->dtype) == 0;
}

static void make_legend(const struct mgpu_bench_trow *rows, int n, struct legend *lg)
{
	int i, j, seen;

	lg->n = 0;
	lg->dtype = mgpu_bench_show_dtype(rows, n);
	for (i = 0; i < n && lg->n < MAX_SERIES; i++) {
		if (!ok_row(&rows[i]) || rows[i].devices < 2)
			continue;
		for (j = 0, seen = 0; j < lg->n; j++)
			seen |= same_series(&rows[lg->first[j]], &rows[i]);
		if (!seen)
			lg->first[lg->n++] = i;
	}
}

/* The colour of row r: its series', or grey for a 1-device row. */
static const char *color_of(const struct legend *lg, const struct mgpu_bench_trow *rows,
			    const struct mgpu_bench_trow *r)
{
	int s;

	if (r->devices < 2)
		return ONE_DEV;
	for (s = 0; s < lg->n; s++)
		if (same_series(&rows[lg->first[s]], r))
			return colors[s];
	return ONE_DEV;
}

static void series_name(const struct mgpu_bench_trow *r, int dtype, char *buf, size_t cap)
{
	dtype = dtype && r->dtype[0];
	snprintf(buf, cap, "%s %s%s%s%s%s", strcmp(r->kind, "gpu") == 0 ? "GPUs" : "CPU ranks",
		 strcmp(r->mode, "dp") == 0 ? "DP" : "DDP", r->sync[0] ? ", sync " : "", r->sync,
		 dtype ? ", " : "", dtype ? r->dtype : "");
}

static void group_open(FILE *fp, const char *name, const char *color)
{
	fputs("<g class=\"series\" data-series=\"", fp);
	esc(fp, name);
	fprintf(fp, "\" data-color=\"%s\">\n", color);
}

/* A vertical error bar from lo to hi at data x, with caps. */
static void errbar(FILE *fp, const struct panel *p, double x, double lo, double hi,
		   const char *color)
{
	double cx = px(p, x);

	if (!isfinite(lo) || !isfinite(hi) || hi <= lo)
		return;
	fprintf(fp, "<path class=\"errbar\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" "
		"d=\"M%.1f,%.1f V%.1f M%.1f,%.1f H%.1f M%.1f,%.1f H%.1f\"/>\n", color, cx,
		py(p, lo), py(p, hi), cx - 4, py(p, lo), cx + 4, cx - 4, py(p, hi), cx + 4);
}

/* What a line panel plots of a row: its value and the repeats' range. */
typedef void (*value_fn)(const struct mgpu_bench_trow *r, double *v, double *lo, double *hi);

static void speedup_of(const struct mgpu_bench_trow *r, double *v, double *lo, double *hi)
{
	double base = r->samples_per_s / r->speedup; /* the 1-device median */

	*v = r->speedup;
	*lo = r->repeats > 1 ? r->samples_per_s_min / base : NAN;
	*hi = r->repeats > 1 ? r->samples_per_s_max / base : NAN;
}

/* Throughput in the panel's unit: samples/s, or tokens/s (x ctx). */
static int tokens_unit;

static void throughput_of(const struct mgpu_bench_trow *r, double *v, double *lo, double *hi)
{
	double k = tokens_unit ? r->ctx : 1;

	*v = r->samples_per_s * k;
	*lo = r->repeats > 1 ? r->samples_per_s_min * k : NAN;
	*hi = r->repeats > 1 ? r->samples_per_s_max * k : NAN;
}

/* One series on a line panel: the points by device count, joined, each
 * with its error bar and a dot. */
static void line_series(FILE *fp, const struct panel *p, const struct mgpu_bench_trow *rows,
			int n, int first, const char *color, value_fn value)
{
	double v, lo, hi;
	int i, d, started = 0;

	fprintf(fp, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", color);
	for (d = 1; d <= MGPU_BENCH_MAXDEV; d++)
		for (i = 0; i < n; i++) {
			if (rows[i].devices != d || !on_line(&rows[i], &rows[first]) ||
			    !isfinite(rows[i].speedup))
				continue;
			value(&rows[i], &v, &lo, &hi);
			fprintf(fp, "%s%.1f,%.1f", started ? " " : "", px(p, d), py(p, v));
			started = 1;
			break;
		}
	fputs("\"/>\n", fp);
	for (i = 0; i < n; i++) {
		if (!on_line(&rows[i], &rows[first]) || !isfinite(rows[i].speedup))
			continue;
		value(&rows[i], &v, &lo, &hi);
		errbar(fp, p, rows[i].devices, lo, hi, rows[i].devices > 1 ? color : ONE_DEV);
		fprintf(fp, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\"/>\n",
			px(p, rows[i].devices), py(p, v), rows[i].devices > 1 ? color : ONE_DEV);
	}
}

/* The panel's data range over every plotted row (error bars included). */
static void line_range(struct panel *p, const struct mgpu_bench_trow *rows, int n,
		       value_fn value)
{
	double v, lo, hi;
	int i;

	for (i = 0; i < n; i++) {
		if (!ok_row(&rows[i]) || !isfinite(rows[i].speedup))
			continue;
		value(&rows[i], &v, &lo, &hi);
		p->xmax = rows[i].devices > p->xmax ? rows[i].devices : p->xmax;
		p->ymax = v > p->ymax ? v : p->ymax;
		p->ymax = isfinite(hi) && hi > p->ymax ? hi : p->ymax;
	}
}

static void speedup_panel(FILE *fp, const struct mgpu_bench_trow *rows, int n,
			  const struct legend *lg)
{
	struct panel p = { 70, PY0, 320, PH, 1, 2, 2 };
	char name[96];
	int s;

	line_range(&p, rows, n, speedup_of);
	p.ymax = p.xmax > p.ymax ? p.xmax : p.ymax;
	p.ymax *= 1.1;
	frame(fp, &p, "Speedup against devices", "devices (ranks)", "speedup (x)");
	x_ticks(fp, &p);
	fprintf(fp, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#888\" "
		"stroke-dasharray=\"6,4\" stroke-width=\"1.5\"/>\n", px(&p, 1), py(&p, 1),
		px(&p, p.xmax), py(&p, p.xmax));
	text(fp, p.x0 + 10, p.y0 + 18, "start", 11, "- - ideal (linear)");
	for (s = 0; s < lg->n; s++) {
		series_name(&rows[lg->first[s]], lg->dtype, name, sizeof name);
		group_open(fp, name, colors[s]);
		line_series(fp, &p, rows, n, lg->first[s], colors[s], speedup_of);
		fputs("</g>\n", fp);
	}
}

static void throughput_panel(FILE *fp, const struct mgpu_bench_trow *rows, int n,
			     const struct legend *lg)
{
	struct panel p = { 490, PY0, 300, PH, 1, 2, 0 };
	char name[96];
	int i, s;

	tokens_unit = 1;
	for (i = 0; i < n; i++)
		if (ok_row(&rows[i]) && rows[i].ctx <= 0)
			tokens_unit = 0;
	line_range(&p, rows, n, throughput_of);
	p.ymax = p.ymax > 0 ? p.ymax * 1.1 : 1;
	frame(fp, &p, tokens_unit ? "Throughput (tokens/s)" : "Throughput (samples/s)",
	      "devices (ranks)", tokens_unit ? "tokens/s" : "samples/s");
	x_ticks(fp, &p);
	for (s = 0; s < lg->n; s++) {
		series_name(&rows[lg->first[s]], lg->dtype, name, sizeof name);
		group_open(fp, name, colors[s]);
		line_series(fp, &p, rows, n, lg->first[s], colors[s], throughput_of);
		fputs("</g>\n", fp);
	}
	/* a sweep of 1-device rows only has no series: its points alone */
	if (lg->n == 0)
		for (i = 0; i < n; i++)
			if (ok_row(&rows[i])) {
				double v, lo, hi;
				throughput_of(&rows[i], &v, &lo, &hi);
				errbar(fp, &p, rows[i].devices, lo, hi, ONE_DEV);
				fprintf(fp, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\"/>\n",
					px(&p, rows[i].devices), py(&p, v), ONE_DEV);
			}
}

static void group_label(const struct mgpu_bench_trow *r, int dtype, char *buf, size_t cap)
{
	dtype = dtype && r->dtype[0];
	snprintf(buf, cap, "%d%s%s%s%s", r->devices, r->devices == 1 ? "" : " ",
		 r->devices == 1 ? "" : strcmp(r->mode, "dp") == 0 ? "DP" : "DDP",
		 dtype ? " " : "", dtype ? r->dtype : "");
}

/* One configuration's bars, one per device, in its series' colour. */
static void bars(FILE *fp, const struct panel *p, const struct mgpu_bench_trow *r, double gx,
		 double bw, int label_values, const char *color)
{
	char buf[32];
	int d;

	for (d = 0; d < r->ndev; d++) {
		double mib = (double)r->peak_bytes[d] / (1 << 20), x = gx + d * bw;
		fprintf(fp, "<rect class=\"bar\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
			"height=\"%.1f\" fill=\"%s\"/>\n", x, py(p, mib), bw - 2,
			py(p, 0) - py(p, mib), color);
		if (label_values) {
			snprintf(buf, sizeof buf, "%.1f", mib);
			text(fp, x + (bw - 2) / 2, py(p, mib) - 4, "middle", 10, buf);
		}
	}
}

static void memory_panel(FILE *fp, const struct mgpu_bench_trow *rows, int n,
			 const struct legend *lg)
{
	struct panel p = { 880, PY0, 250, PH, 0, 1, 1 };
	int i, d, g = 0, ng = 0, maxdev = 1;
	double gw, bw;
	char buf[96];

	for (i = 0; i < n; i++)
		if (ok_row(&rows[i]) && rows[i].ndev > 0) {
			ng++;
			maxdev = rows[i].ndev > maxdev ? rows[i].ndev : maxdev;
			for (d = 0; d < rows[i].ndev; d++)
				if ((double)rows[i].peak_bytes[d] / (1 << 20) > p.ymax)
					p.ymax = (double)rows[i].peak_bytes[d] / (1 << 20);
		}
	p.ymax *= 1.15;
	frame(fp, &p, "Peak memory per device", "configuration (devices, mode)",
	      "peak memory (MiB)");
	gw = p.w / (ng ? ng : 1);
	bw = gw * 0.8 / maxdev;
	for (i = 0; i < n; i++) {
		if (!ok_row(&rows[i]) || rows[i].ndev == 0)
			continue;
		if (rows[i].devices > 1)
			series_name(&rows[i], lg->dtype, buf, sizeof buf);
		else
			snprintf(buf, sizeof buf, "1 device");
		group_open(fp, buf, color_of(lg, rows, &rows[i]));
		/* a value label wider than its bar would run into the next one */
		bars(fp, &p, &rows[i], p.x0 + g * gw + gw * 0.1, bw, bw >= 30,
		     color_of(lg, rows, &rows[i]));
		fputs("</g>\n", fp);
		group_label(&rows[i], lg->dtype, buf, sizeof buf);
		text(fp, p.x0 + g * gw + gw / 2, p.y0 + p.h + 16, "middle", 11, buf);
		g++;
	}
	text(fp, p.x0 + p.w / 2, p.y0 + p.h + 54, "middle", 10, "one bar per device, in order");
}

/* The colours once, right of the panels: grey, then each series. */
static void legend(FILE *fp, const struct mgpu_bench_trow *rows, const struct legend *lg,
		   int repeats)
{
	char name[96];
	int s;

	fprintf(fp, "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\"/>\n",
		LEGEND_X, PY0 + 4, ONE_DEV);
	text(fp, LEGEND_X + 18, PY0 + 14, "start", 11, "1 device");
	for (s = 0; s < lg->n; s++) {
		series_name(&rows[lg->first[s]], lg->dtype, name, sizeof name);
		fprintf(fp, "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\"/>\n",
			LEGEND_X, PY0 + 24 + 20 * s, colors[s]);
		text(fp, LEGEND_X + 18, PY0 + 34 + 20 * s, "start", 11, name);
	}
	if (repeats > 1)
		text(fp, LEGEND_X, PY0 + 54 + 20 * lg->n, "start", 10, "bars: slowest to fastest run");
}

int mgpu_bench_plot_svg(FILE *fp, const struct mgpu_bench_trow *rows, int n, const char *title)
{
	struct legend lg;
	int i, ok = 0, repeats = 0;

	for (i = 0; i < n; i++)
		if (ok_row(&rows[i])) {
			ok++;
			repeats = rows[i].repeats > repeats ? rows[i].repeats : repeats;
		}
	if (!ok)
		return mgpu_err(MGPU_EINVAL, "plot: no configuration succeeded");
	make_legend(rows, n, &lg);
	fprintf(fp, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
		"viewBox=\"0 0 %d %d\" font-family=\"sans-serif\">\n"
		"<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n", W, H, W, H);
	if (title)
		text(fp, W / 2.0, 28, "middle", 15, title);
	speedup_panel(fp, rows, n, &lg);
	throughput_panel(fp, rows, n, &lg);
	memory_panel(fp, rows, n, &lg);
	legend(fp, rows, &lg, repeats);
	fputs("</svg>\n", fp);
	if (ferror(fp))
		return mgpu_err(MGPU_EIO, "plot: cannot write the SVG");
	return 0;
}
