/* Tallies, time-weighted averages, batch means and histograms. */
#include <gsl/gsl_cdf.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kairos/statistics.h"
#include "base/error.h"

/* ---- tally ---- */

void kr_tally_init(kr_tally_t *t)
{
    *t = (kr_tally_t){ 0 };
}

void kr_tally_add(kr_tally_t *t, double x)
{
    t->count++;
    double d = x - t->mean;
    t->mean += d / (double)t->count;
    t->m2 += d * (x - t->mean);
    if (t->count == 1 || x < t->min) t->min = x;
    if (t->count == 1 || x > t->max) t->max = x;
}

double kr_tally_mean(const kr_tally_t *t) { return t->count ? t->mean : NAN; }
double kr_tally_min(const kr_tally_t *t) { return t->count ? t->min : NAN; }
double kr_tally_max(const kr_tally_t *t) { return t->count ? t->max : NAN; }
double kr_tally_variance(const kr_tally_t *t) { return t->count > 1 ? t->m2 / (double)(t->count - 1) : NAN; }
double kr_tally_sd(const kr_tally_t *t) { return sqrt(kr_tally_variance(t)); }

/* ---- time-weighted average ---- */

void kr_timeavg_init(kr_timeavg_t *a, kr_time_t start, double value)
{
    *a = (kr_timeavg_t){ .start = start, .last = start, .value = value, .min = value, .max = value };
}

void kr_timeavg_set(kr_timeavg_t *a, kr_time_t t, double value)
{
    if (t > a->last) {
        a->area += a->value * (double)(t - a->last);
        a->last = t;
    }
    a->value = value;
    if (value < a->min) a->min = value;
    if (value > a->max) a->max = value;
}

void kr_timeavg_reset(kr_timeavg_t *a, kr_time_t t)
{
    kr_timeavg_init(a, t, a->value);
}

double kr_timeavg_mean(const kr_timeavg_t *a, kr_time_t t)
{
    double area = a->area;
    kr_time_t end = a->last;
    if (t > end) {
        area += a->value * (double)(t - end);
        end = t;
    }
    return end > a->start ? area / (double)(end - a->start) : a->value;
}

/* ---- batch means ---- */

void kr_batchmeans_init(kr_batchmeans_t *b)
{
    memset(b, 0, sizeof *b);
    b->batch_size = 1;
    kr_tally_init(&b->all);
}

void kr_batchmeans_add(kr_batchmeans_t *b, double x)
{
    kr_tally_add(&b->all, x);
    b->current += x;
    if (++b->in_current < b->batch_size) return;
    b->sums[b->full++] = b->current;
    b->current = 0;
    b->in_current = 0;
    if (b->full < KR_BATCH_SLOTS) return;
    /* Every slot full: merge neighbours, the batch size doubles. */
    for (uint32_t i = 0; i < KR_BATCH_SLOTS / 2; i++) b->sums[i] = b->sums[2 * i] + b->sums[2 * i + 1];
    b->full = KR_BATCH_SLOTS / 2;
    b->batch_size *= 2;
}

double kr_batchmeans_mean(const kr_batchmeans_t *b) { return kr_tally_mean(&b->all); }
uint32_t kr_batchmeans_batches(const kr_batchmeans_t *b) { return b->full; }

double kr_batchmeans_halfwidth(const kr_batchmeans_t *b)
{
    if (b->full < 2) return NAN;
    kr_tally_t means;
    kr_tally_init(&means);
    for (uint32_t i = 0; i < b->full; i++) kr_tally_add(&means, b->sums[i] / (double)b->batch_size);
    double t = gsl_cdf_tdist_Pinv(0.975, (double)(b->full - 1));
    return t * kr_tally_sd(&means) / sqrt((double)b->full);
}

/* ---- histogram ---- */

kr_status_t kr_histogram_init(kr_histogram_t *h, double lo, double hi, size_t bins)
{
    memset(h, 0, sizeof *h);
    if (!isfinite(lo) || !isfinite(hi) || !(lo < hi))
        return kr__fail(KR_ERR_INVALID_ARG, "histogram: expected finite lo < hi, found lo %g, hi %g", lo, hi);
    if (bins < 1 || bins > (1u << 24))
        return kr__fail(KR_ERR_INVALID_ARG, "histogram: expected 1 to %u bins, found %zu", 1u << 24, bins);
    h->counts = calloc(bins, sizeof *h->counts);
    if (!h->counts) return kr__fail(KR_ERR_NOMEM, "histogram: out of memory");
    h->lo = lo;
    h->hi = hi;
    h->bins = bins;
    return KR_OK;
}

void kr_histogram_fini(kr_histogram_t *h)
{
    free(h->counts);
    memset(h, 0, sizeof *h);
}

void kr_histogram_add(kr_histogram_t *h, double x)
{
    h->total++;
    if (!(x >= h->lo)) { h->under++; return; }   /* NaN counts as under */
    if (x >= h->hi) { h->over++; return; }
    size_t i = (size_t)((x - h->lo) / (h->hi - h->lo) * (double)h->bins);
    if (i >= h->bins) i = h->bins - 1;            /* rounding at the top edge */
    h->counts[i]++;
}

double kr_histogram_quantile(const kr_histogram_t *h, double q)
{
    uint64_t binned = h->total - h->under - h->over;
    if (!binned || !(q >= 0 && q <= 1)) return NAN;
    double target = q * (double)binned, seen = 0, width = (h->hi - h->lo) / (double)h->bins;
    for (size_t i = 0; i < h->bins; i++) {
        double c = (double)h->counts[i];
        if (c > 0 && seen + c >= target) return h->lo + width * ((double)i + (target - seen) / c);
        seen += c;
    }
    return h->hi;
}

