// SPDX-License-Identifier: GPL-2.0
/*
 * migrc compare --svg: a self-contained SVG chart.
 *
 * Top panel: TLB shootdowns per CPU, one bar per run in each CPU group.
 * Bottom panel: the main counters of each run as a percentage of the first
 * run, with the absolute values printed on the bars.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "migrc.h"

#define W		1000
#define PANEL_H		340
#define LEFT		90
#define RIGHT		30
#define TOP		80
#define GAP		120
#define PLOT_W		(W - LEFT - RIGHT)
#define PLOT_H		(PANEL_H - 60)

static const char *const colors[] = {
	"#4e79a7", "#f28e2b", "#59a14f", "#e15759",
	"#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
};

#define NCOLORS ((int)ARRAY_SIZE(colors))

static void xml_text(FILE *f, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '<':
			fputs("&lt;", f);
			break;
		case '>':
			fputs("&gt;", f);
			break;
		case '&':
			fputs("&amp;", f);
			break;
		case '"':
			fputs("&quot;", f);
			break;
		default:
			fputc(*s, f);
		}
	}
}

/* 1234567 -> "1.23M" */
static const char *human(double v, char *buf, size_t len)
{
	static const char *const suf[] = { "", "k", "M", "G", "T", "P" };
	int i = 0;

	while (fabs(v) >= 1000 && i < 5) {
		v /= 1000;
		i++;
	}
	if (i == 0 && v != floor(v))
		snprintf(buf, len, "%.2f", v);
	else
		snprintf(buf, len, i ? "%.3g%s" : "%.0f%s", v, suf[i]);
	return buf;
}

/* Smallest 1/2/5 x 10^n >= v. */
static double nice_ceil(double v)
{
	double p, m;

	if (v <= 0)
		return 1;
	p = pow(10, floor(log10(v)));
	m = v / p;
	if (m <= 1)
		return p;
	if (m <= 2)
		return 2 * p;
	if (m <= 5)
		return 5 * p;
	return 10 * p;
}

static void svg_text(FILE *f, double x, double y, const char *anchor, int size,
		     const char *extra, const char *s)
{
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" font-size=\"%d\"%s>",
		x, y, anchor, size, extra ? extra : "");
	xml_text(f, s);
	fputs("</text>\n", f);
}

static void y_axis(FILE *f, int top, double ymax, const char *title, bool pct)
{
	char buf[32];
	int i;

	for (i = 0; i <= 5; i++) {
		double v = ymax * i / 5;
		double y = top + PLOT_H - PLOT_H * (double)i / 5;

		fprintf(f,
			"<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>\n",
			LEFT, y, LEFT + PLOT_W, y);
		if (pct)
			snprintf(buf, sizeof(buf), "%.0f%%", v);
		else
			human(v, buf, sizeof(buf));
		svg_text(f, LEFT - 6, y + 4, "end", 11, NULL, buf);
	}
	fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#333\"/>\n",
		LEFT, top, LEFT, top + PLOT_H);
	fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#333\"/>\n",
		LEFT, top + PLOT_H, LEFT + PLOT_W, top + PLOT_H);
	fprintf(f,
		"<text transform=\"translate(%d,%d) rotate(-90)\" text-anchor=\"middle\" font-size=\"12\">",
		22, top + PLOT_H / 2);
	xml_text(f, title);
	fputs("</text>\n", f);
}

static void bar(FILE *f, double x, double w, double y, double h, int color,
		const char *tip)
{
	fprintf(f,
		"<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\"><title>",
		x, y, w, h, colors[color % NCOLORS]);
	xml_text(f, tip);
	fputs("</title></rect>\n", f);
}

static void per_cpu_panel(FILE *f, struct run *runs, int nruns, const char **labels, int top)
{
	double ymax = 0, gw, bw;
	int i, c, maxcpus = 0, step;
	char tip[2048], num[32];

	svg_text(f, W / 2, top - 14, "middle", 15, " font-weight=\"bold\"",
		 "TLB shootdowns per CPU (/proc/interrupts)");
	for (i = 0; i < nruns; i++) {
		if (!runs[i].has_tlb)
			continue;
		if (runs[i].ncpus > maxcpus)
			maxcpus = runs[i].ncpus;
		for (c = 0; c < runs[i].ncpus; c++)
			if (runs[i].per_cpu[c] > ymax)
				ymax = (double)runs[i].per_cpu[c];
	}
	if (!maxcpus) {
		svg_text(f, W / 2, top + PLOT_H / 2, "middle", 14, NULL,
			 "no TLB shootdown data in these runs");
		return;
	}
	ymax = nice_ceil(ymax);
	y_axis(f, top, ymax, "TLB shootdowns", false);
	gw = (double)PLOT_W / maxcpus;
	bw = gw * 0.8 / nruns;
	step = (maxcpus + 31) / 32;
	for (c = 0; c < maxcpus; c++) {
		for (i = 0; i < nruns; i++) {
			double v, h;

			if (!runs[i].has_tlb || c >= runs[i].ncpus)
				continue;
			v = (double)runs[i].per_cpu[c];
			h = PLOT_H * v / ymax;
			snprintf(tip, sizeof(tip), "%.100s CPU%d: %s", labels[i], c,
				 human(v, num, sizeof(num)));
			bar(f, LEFT + c * gw + gw * 0.1 + i * bw, bw, top + PLOT_H - h, h, i, tip);
		}
		if (c % step == 0) {
			snprintf(num, sizeof(num), "%d", c);
			svg_text(f, LEFT + (c + 0.5) * gw, top + PLOT_H + 16, "middle", 10, NULL,
				 num);
		}
	}
	svg_text(f, LEFT + PLOT_W / 2, top + PLOT_H + 36, "middle", 12, NULL, "CPU");
}

struct metric {
	char name[NAMELEN];
	double v[16];
	bool has[16];
};

static bool counter_value(struct run *r, const char *name, double *v)
{
	struct ctr *c;

	if (!strcmp(name, "TLB shootdowns")) {
		*v = (double)r->tlb_total;
		return r->has_tlb;
	}
	if (!strcmp(name, "wall time")) {
		*v = r->wall_s;
		return !isnan(r->wall_s);
	}
	if (!strcmp(name, "tlb_flush")) {
		c = r->has_flush ? ctrlist_find(&r->flush, "total") : NULL;
	} else {
		c = ctrlist_find(&r->hw, name);
		if (!c)
			c = ctrlist_find(&r->vmstat, name);
	}
	if (!c || !c->valid)
		return false;
	*v = (double)c->val;
	return true;
}

static int collect_metrics(struct run *runs, int nruns, struct metric *m, int max)
{
	static const char *const names[] = {
		"TLB shootdowns", "tlb_flush", "dTLB-load-misses", "iTLB-load-misses",
		"pgmigrate_success", "pgdemote_kswapd", "pgpromote_success", "wall time",
	};
	int i, k, n = 0;

	for (k = 0; k < (int)ARRAY_SIZE(names) && n < max; k++) {
		memset(&m[n], 0, sizeof(m[n]));
		snprintf(m[n].name, NAMELEN, "%s", names[k]);
		for (i = 0; i < nruns && i < 16; i++)
			m[n].has[i] = counter_value(&runs[i], names[k], &m[n].v[i]);
		if (m[n].has[0] && m[n].v[0] > 0)
			n++;
	}
	return n;
}

static void counters_panel(FILE *f, struct run *runs, int nruns, const char **labels,
			   int top)
{
	struct metric m[8];
	double ymax = 100, gw, bw;
	char tip[2048], num[32], pct[32];
	int i, k, n = collect_metrics(runs, nruns, m, 8);

	svg_text(f, W / 2, top - 14, "middle", 15, " font-weight=\"bold\"",
		 "Main counters, relative to the first run (bar labels: absolute values)");
	if (!n) {
		svg_text(f, W / 2, top + PLOT_H / 2, "middle", 14, NULL,
			 "no non-zero counters in the first run");
		return;
	}
	for (k = 0; k < n; k++)
		for (i = 0; i < nruns; i++)
			if (m[k].has[i] && 100 * m[k].v[i] / m[k].v[0] > ymax)
				ymax = 100 * m[k].v[i] / m[k].v[0];
	ymax = nice_ceil(ymax);
	y_axis(f, top, ymax, "% of first run", true);
	gw = (double)PLOT_W / n;
	bw = gw * 0.8 / nruns;
	for (k = 0; k < n; k++) {
		for (i = 0; i < nruns; i++) {
			double p, h, x;

			if (!m[k].has[i])
				continue;
			p = 100 * m[k].v[i] / m[k].v[0];
			h = PLOT_H * p / ymax;
			x = LEFT + k * gw + gw * 0.1 + i * bw;
			snprintf(tip, sizeof(tip), "%.100s %s: %s (%.1f%%)", labels[i], m[k].name,
				 human(m[k].v[i], num, sizeof(num)), p);
			bar(f, x, bw, top + PLOT_H - h, h, i, tip);
			snprintf(pct, sizeof(pct), "%s", num);
			svg_text(f, x + bw / 2, top + PLOT_H - h - 4, "middle", 10, NULL, pct);
		}
		svg_text(f, LEFT + (k + 0.5) * gw, top + PLOT_H + 16, "middle", 11, NULL,
			 m[k].name);
	}
	svg_text(f, LEFT + PLOT_W / 2, top + PLOT_H + 36, "middle", 12, NULL, "counter");
}

static void legend(FILE *f, int nruns, const char **labels)
{
	int i, x = LEFT;

	for (i = 0; i < nruns; i++) {
		fprintf(f, "<rect x=\"%d\" y=\"40\" width=\"14\" height=\"14\" fill=\"%s\"/>\n",
			x, colors[i % NCOLORS]);
		svg_text(f, x + 20, 52, "start", 12, NULL, labels[i]);
		x += 40 + 8 * (int)strlen(labels[i]);
	}
}

int write_svg(FILE *f, struct run *runs, int nruns, const char **labels)
{
	int h = TOP + 2 * PANEL_H + GAP;
	char title[512];
	size_t n;
	int i;

	n = snprintf(title, sizeof(title), "migrc compare:");
	for (i = 0; i < nruns && n < sizeof(title); i++)
		n += snprintf(title + n, sizeof(title) - n, "%s %s", i ? " vs" : "", labels[i]);
	fprintf(f,
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"sans-serif\">\n",
		W, h, W, h);
	fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
	svg_text(f, W / 2, 24, "middle", 18, " font-weight=\"bold\"", title);
	legend(f, nruns, labels);
	per_cpu_panel(f, runs, nruns, labels, TOP + 30);
	counters_panel(f, runs, nruns, labels, TOP + 30 + PANEL_H + GAP / 2);
	fputs("</svg>\n", f);
	return ferror(f) ? -1 : 0;
}
