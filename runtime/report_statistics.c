/* Statistics written into a kind's report (kairos/kind.h), for the stats
 * file. */
#include <math.h>
#include <stdio.h>
#include "kairos/kind.h"
#include "kairos/statistics.h"
#include "runtime/model_file.h"

/* ---- reports ---- */

static void put(kr_report_t *r, const char *name, const char *suffix, double v)
{
    char key[256];
    snprintf(key, sizeof key, "%s_%s", name, suffix);
    kr_report_number(r, key, v);
}

void kr_report_tally(kr_report_t *r, const char *name, const kr_tally_t *t)
{
    char key[256];
    snprintf(key, sizeof key, "%s_count", name);
    kr_report_int(r, key, (int64_t)t->count);
    put(r, name, "mean", kr_tally_mean(t));
    put(r, name, "sd", kr_tally_sd(t));
    put(r, name, "min", kr_tally_min(t));
    put(r, name, "max", kr_tally_max(t));
}

void kr_report_histogram(kr_report_t *r, const char *name, const kr_histogram_t *h)
{
    json_t *counts = json_array();
    for (size_t i = 0; i < h->bins; i++) json_array_append_new(counts, json_integer((json_int_t)h->counts[i]));
    json_object_set_new(kr__report_json(r), name,
                        json_pack("{s:f, s:f, s:o, s:I, s:I}", "lo", h->lo, "hi", h->hi, "counts", counts, "under",
                                  (json_int_t)h->under, "over", (json_int_t)h->over));
}

void kr_report_series(kr_report_t *r, const char *name, const double *time, const double *value, size_t n)
{
    json_t *ts = json_array(), *vs = json_array();
    for (size_t i = 0; i < n; i++) {
        json_array_append_new(ts, isfinite(time[i]) ? json_real(time[i]) : json_null());
        json_array_append_new(vs, isfinite(value[i]) ? json_real(value[i]) : json_null());
    }
    json_object_set_new(kr__report_json(r), name, json_pack("{s:o, s:o}", "time", ts, "value", vs));
}
