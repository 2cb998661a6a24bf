/*
 * svg.c - speedup and memory plot as SVG (see svg.h).
 *
 * Coordinates: each panel maps data (x, y) to pixels with px() / py() of a
 * struct panel; y grows upwards in data, downwards in SVG. Rows of
 * different dtypes are different series, each from its own 1-device point;
 * the dtype is named when a row ran in another than fp32
 * (mgpu_bench_show_dtype).
 */
#include "bench/svg.h"

#include <math.h>   /* pow, floor, log10, isfinite */
#include <string.h> /* strcmp */

#include "core/err.h" /* mgpu_err */

#define W 1040
#define H 440
#define MEM_X0 580  /* memory panel: left edge and width; its legend goes */
#define MEM_W 370   /* to the right of it, where no bar can be */

static const char *const colors[] = { "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
				      "#9467bd", "#8c564b", "#e377c2", "#7f7f7f" };

struct panel {
	double x0, y0, w, h;      /* pixel box (top left, size) */
	double xmin, xmax, ymax;  /* data range (y from 0) */
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

static void esc(FILE *fp, const char *s)
{
	for (; *s; s++) {
		if (*s == '<')
			fputs("&lt;", fp);
		else if (*s == '>')
			fputs("&gt;", fp);
		else if (*s == '&')
			fputs("&amp;", fp);
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
		snprintf(buf, sizeof buf, "%g", y);
		text(fp, p->x0 - 6, py(p, y) + 4, "end", 11, buf);
	}
	fprintf(fp, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
		"stroke=\"#333\"/>\n", p->x0, p->y0, p->w, p->h);
	text(fp, p->x0 + p->w / 2, p->y0 - 12, "middle", 14, title);
	text(fp, p->x0 + p->w / 2, p->y0 + p->h + 38, "middle", 12, xlabel);
	fprintf(fp, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"12\" "
		"transform=\"rotate(-90 %.1f %.1f)\">%s</text>\n", p->x0 - 44, p->y0 + p->h / 2,
		p->x0 - 44, p->y0 + p->h / 2, ylabel);
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

/* One series: the 1-device point (speedup 1) of the same kind and dtype,
 * and every multi-device row of the same kind, mode, sync backend and
 * dtype, by device count. */
static void series(FILE *fp, const struct panel *p, const struct mgpu_bench_trow *rows, int n,
		   int first, const char *color)
{
	int i, d, started = 0;

	fprintf(fp, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", color);
	for (d = 1; d <= MGPU_BENCH_MAXDEV; d++)
		for (i = 0; i < n; i++) {
			const struct mgpu_bench_trow *r = &rows[i];
			if (r->devices != d || !ok_row(r) || !isfinite(r->speedup) ||
			    (d > 1 && !same_series(r, &rows[first])) ||
			    (d == 1 && (strcmp(r->kind, rows[first].kind) != 0 ||
					strcmp(r->dtype, rows[first].dtype) != 0)))
				continue;
			fprintf(fp, "%s%.1f,%.1f", started ? " " : "", px(p, d), py(p, r->speedup));
			started = 1;
			break;
		}
	fputs("\"/>\n", fp);
	for (i = 0; i < n; i++)
		if (ok_row(&rows[i]) && isfinite(rows[i].speedup) && rows[i].devices > 1 &&
		    same_series(&rows[i], &rows[first]))
			fprintf(fp, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\"/>\n",
				px(p, rows[i].devices), py(p, rows[i].speedup), color);
}

static void series_name(const struct mgpu_bench_trow *r, int dtype, char *buf, size_t cap)
{
	dtype = dtype && r->dtype[0];
	snprintf(buf, cap, "%s %s%s%s%s%s", strcmp(r->kind, "gpu") == 0 ? "GPUs" : "CPU ranks",
		 strcmp(r->mode, "dp") == 0 ? "DP" : "DDP", r->sync[0] ? ", sync " : "", r->sync,
		 dtype ? ", " : "", dtype ? r->dtype : "");
}

static void speedup_panel(FILE *fp, const struct mgpu_bench_trow *rows, int n)
{
	struct panel p = { 80, 60, 360, 300, 1, 2, 2 };
	int i, j, k = 0, seen;
	char buf[96];

	for (i = 0; i < n; i++)
		if (ok_row(&rows[i])) {
			p.xmax = rows[i].devices > p.xmax ? rows[i].devices : p.xmax;
			if (isfinite(rows[i].speedup) && rows[i].speedup > p.ymax)
				p.ymax = rows[i].speedup;
		}
	p.ymax = p.xmax > p.ymax ? p.xmax : p.ymax;
	p.ymax *= 1.1;
	frame(fp, &p, "Speedup against devices", "devices (ranks)", "speedup (x)");
	for (i = 1; i <= (int)p.xmax; i++) {
		snprintf(buf, sizeof buf, "%d", i);
		text(fp, px(&p, i), p.y0 + p.h + 16, "middle", 11, buf);
	}
	fprintf(fp, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#888\" "
		"stroke-dasharray=\"6,4\" stroke-width=\"1.5\"/>\n", px(&p, 1), py(&p, 1),
		px(&p, p.xmax), py(&p, p.xmax));
	text(fp, p.x0 + 10, p.y0 + 18, "start", 11, "- - ideal (linear)");
	for (i = 0; i < n; i++) {
		if (!ok_row(&rows[i]) || rows[i].devices < 2)
			continue;
		for (j = 0, seen = 0; j < i; j++)
			seen |= rows[j].devices > 1 && ok_row(&rows[j]) && same_series(&rows[j], &rows[i]);
		if (seen)
			continue;
		series(fp, &p, rows, n, i, colors[k % 8]);
		series_name(&rows[i], mgpu_bench_show_dtype(rows, n), buf, sizeof buf);
		fprintf(fp, "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"4\" fill=\"%s\"/>\n",
			p.x0 + 10, p.y0 + 29 + 16 * k, colors[k % 8]);
		text(fp, p.x0 + 28, p.y0 + 35 + 16 * k, "start", 11, buf);
		k++;
	}
}

static void group_label(const struct mgpu_bench_trow *r, int dtype, char *buf, size_t cap)
{
	dtype = dtype && r->dtype[0];
	snprintf(buf, cap, "%d%s%s%s%s", r->devices, r->devices == 1 ? "" : " ",
		 r->devices == 1 ? "" : strcmp(r->mode, "dp") == 0 ? "DP" : "DDP",
		 dtype ? " " : "", dtype ? r->dtype : "");
}

static void bars(FILE *fp, const struct panel *p, const struct mgpu_bench_trow *r, double gx,
		 double bw, int label_values)
{
	char buf[32];
	int d;

	for (d = 0; d < r->ndev; d++) {
		double mib = (double)r->peak_bytes[d] / (1 << 20), x = gx + d * bw;
		fprintf(fp, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
			"fill=\"%s\"/>\n", x, py(p, mib), bw - 2, py(p, 0) - py(p, mib),
			colors[d % 8]);
		if (label_values) {
			snprintf(buf, sizeof buf, "%.1f", mib);
			text(fp, x + (bw - 2) / 2, py(p, mib) - 4, "middle", 10, buf);
		}
	}
}

static void memory_panel(FILE *fp, const struct mgpu_bench_trow *rows, int n)
{
	struct panel p = { MEM_X0, 60, MEM_W, 300, 0, 1, 1 };
	int i, d, g = 0, ng = 0, maxdev = 1;
	double gw, bw;
	char buf[64];

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
		/* a value label wider than its bar would run into the next one */
		bars(fp, &p, &rows[i], p.x0 + g * gw + gw * 0.1, bw, bw >= 30);
		group_label(&rows[i], mgpu_bench_show_dtype(rows, n), buf, sizeof buf);
		text(fp, p.x0 + g * gw + gw / 2, p.y0 + p.h + 16, "middle", 11, buf);
		g++;
	}
	/* the legend sits outside the plot area: inside, at 8 devices, the
	 * tallest bars ran under it */
	for (d = 0; d < maxdev && d < 8; d++) {
		fprintf(fp, "<rect x=\"%.1f\" y=\"%.1f\" width=\"10\" height=\"10\" fill=\"%s\"/>\n",
			p.x0 + p.w + 14, p.y0 + 10 + 15 * d, colors[d % 8]);
		snprintf(buf, sizeof buf, "dev %d", d);
		text(fp, p.x0 + p.w + 29, p.y0 + 19 + 15 * d, "start", 11, buf);
	}
}

int mgpu_bench_plot_svg(FILE *fp, const struct mgpu_bench_trow *rows, int n, const char *title)
{
	int i, ok = 0;

	for (i = 0; i < n; i++)
		ok += ok_row(&rows[i]);
	if (!ok)
		return mgpu_err(MGPU_EINVAL, "plot: no configuration succeeded");
	fprintf(fp, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
		"viewBox=\"0 0 %d %d\" font-family=\"sans-serif\">\n"
		"<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n", W, H, W, H);
	if (title)
		text(fp, W / 2.0, 24, "middle", 15, title);
	speedup_panel(fp, rows, n);
	memory_panel(fp, rows, n);
	fputs("</svg>\n", fp);
	if (ferror(fp))
		return mgpu_err(MGPU_EIO, "plot: cannot write the SVG");
	return 0;
}
