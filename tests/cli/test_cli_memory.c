/* `kairos validate --ranks N`'s memory estimate (issue 19): the section is
 * there, its figures follow the model (twice the LPs, about twice the
 * events; twice the walkers, about twice the entities and ghosts), ranks
 * split the one-rank totals, an uncut world has no halo, and the stats
 * field the section names for the measured peak is the one a run writes. */
#include <math.h>
#include "spawn.h"

TestSuite(cli_memory, .fini = cli_cleanup);

/* One rank's line: "  rank K: TOTAL  (entities N in B, components B;
 * events N in B; halos ~N ghosts in B; other B)". */
typedef struct rank_line {
    double total, entity_bytes, event_bytes, halo_bytes;
    long entities, events, ghosts;
    bool idle, halos;
} rank_line_t;

/* "1,234" -> 1234 */
static long count_at(const char *s)
{
    long n = 0;
    for (; (*s >= '0' && *s <= '9') || *s == ','; s++)
        if (*s != ',') n = n * 10 + (*s - '0');
    return n;
}

/* "12.5 MB" -> 12500000 */
static double bytes_at(const char *s)
{
    double v = 0;
    char unit[8] = "";
    cr_assert_eq(sscanf(s, "%lf %7s", &v, unit), 2, "a size: %.20s", s);
    switch (unit[0]) {
    case 'B': return v;
    case 'K': return v * 1e3;
    case 'M': return v * 1e6;
    case 'G': return v * 1e9;
    default: cr_assert_fail("unit '%s' in %.20s", unit, s);
    }
    return 0;
}

static const char *after(const char *line, const char *key)
{
    const char *p = strstr(line, key);
    cr_assert(p, "'%s' missing from: %.200s", key, line);
    return p + strlen(key);
}

static rank_line_t rank_line(const char *out, int rank)
{
    const char *section = strstr(out, "memory (estimate, after setup):\n");
    cr_assert(section, "no memory section in:\n%s", out);
    cr_assert(strstr(section, "rank_info[].peak_memory_bytes"), "the measured peak is not named:\n%s", section);
    char head[32];
    snprintf(head, sizeof head, "\n  rank %d: ", rank);
    const char *line = strstr(section, head);
    cr_assert(line, "no line for rank %d in:\n%s", rank, section);
    line += strlen(head);
    char text[512];
    snprintf(text, sizeof text, "%.*s", (int)strcspn(line, "\n"), line);
    rank_line_t r = { .total = bytes_at(text), .idle = strstr(text, "(idle)") != NULL };
    if (r.idle) return r;
    r.entities = count_at(after(text, "(entities "));
    r.entity_bytes = bytes_at(after(after(text, "(entities "), " in "));
    r.events = count_at(after(text, "; events "));
    r.event_bytes = bytes_at(after(after(text, "; events "), " in "));
    r.halos = !strstr(text, "halos none");
    if (r.halos) {
        r.ghosts = count_at(after(text, "halos ~"));
        r.halo_bytes = bytes_at(after(after(text, "halos ~"), " in "));
    }
    return r;
}

static char *validate(const char *model, const char *ranks, const char *set)
{
    cli_result_t r = set ? kairos("validate", model, "--ranks", ranks, "--set", set, NULL)
                         : kairos("validate", model, "--ranks", ranks, NULL);
    cr_assert_eq(r.status, 0, "status %d: %s", r.status, r.err);
    cr_assert_str_empty(r.err);
    free(r.err);
    return r.out;
}

static void near(double got, double want, double tolerance, const char *what)
{
    cr_assert(fabs(got - want) <= tolerance * want, "%s: %g, expected about %g", what, got, want);
}

/* examples/phold.json: 4 simulators of 256 LPs, 16 start events each,
 * all scheduled by setup. */
Test(cli_memory, phold_events_follow_the_lps_and_split_over_ranks)
{
    const char *m = cli_source("examples/phold.json");
    char *one = validate(m, "1", NULL);
    rank_line_t r1 = rank_line(one, 0);
    cr_assert_eq(r1.events, 4 * 256 * 16, "%s", one);
    cr_assert_eq(r1.entities, 4 * 256, "%s", one);
    cr_assert(!r1.halos, "phold has no regions:\n%s", one);
    cr_assert(r1.event_bytes >= 64.0 * r1.events, "at least a 64-byte record an event:\n%s", one);
    cr_assert(r1.total >= r1.entity_bytes + r1.event_bytes, "%s", one);

    /* twice the LPs: twice the entities and events, about twice the bytes */
    char *twice = validate(m, "1", "simulators.phold.params.lps=512");
    rank_line_t r2 = rank_line(twice, 0);
    cr_assert_eq(r2.events, 2 * r1.events, "%s", twice);
    cr_assert_eq(r2.entities, 2 * r1.entities, "%s", twice);
    near(r2.event_bytes, 2 * r1.event_bytes, 0.15, "events' bytes, twice the LPs");
    near(r2.total, 2 * r1.total, 0.15, "total, twice the LPs");

    /* two ranks share the simulators, two each: half the events and bytes
     * each, and together what one rank holds */
    char *two = validate(m, "2", NULL);
    rank_line_t a = rank_line(two, 0), b = rank_line(two, 1);
    cr_assert_eq(a.events, r1.events / 2, "%s", two);
    cr_assert_eq(b.events, r1.events / 2, "%s", two);
    near(a.total + b.total, r1.total, 0.01, "two ranks' totals against one rank's");
    near(a.total, r1.total / 2, 0.05, "rank 0 of two");

    /* a fifth rank has nothing to run */
    char *five = validate(m, "5", NULL);
    cr_assert(rank_line(five, 4).idle, "%s", five);
    cr_assert_eq(rank_line(five, 0).events, r1.events / 4, "%s", five);
    /* a run of idle ranks is one line, in the plan and in the estimate */
    char *many = validate(m, "1000", NULL);
    cr_assert(strstr(many, "\n  ranks 4-999: (idle)\n") && strstr(many, "\n  ranks 4-999: 0 B each (idle)\n"),
              "%s", many);
    cr_assert_lt(strlen(many), 4000, "%s", many);
    free(many);
    free(one);
    free(twice);
    free(two);
    free(five);
}

/* examples/walkers.json: 5000 walkers on 60 x 40 cells cut 2 x 2. */
Test(cli_memory, walkers_halos_follow_the_cut_and_the_density)
{
    const char *m = cli_source("examples/walkers.json");
    char *cut = validate(m, "1", NULL);
    rank_line_t c = rank_line(cut, 0);
    cr_assert(c.halos && c.ghosts > 0, "a 2 x 2 cut has halos:\n%s", cut);
    cr_assert(c.entities >= 5000, "%s", cut);
    /* each quarter (30 x 20 cells) has a halo one cell wide on its two
     * inner sides, the world's edge clipping the rest: 31 + 20 cells, 204
     * in all of 2400, at the density of 5000 walkers */
    near((double)c.ghosts, 5000.0 * 204 / 2400, 0.02, "ghosts of a 2 x 2 cut");

    char *uncut = validate(m, "1", "simulators.walkers.regions=[1,1]");
    rank_line_t u = rank_line(uncut, 0);
    cr_assert(!u.halos, "one region has no halo:\n%s", uncut);
    cr_assert(u.entities >= 5000 && u.entities <= c.entities, "%s", uncut);

    char *dense = validate(m, "1", "simulators.walkers.params.agents=10000");
    rank_line_t d = rank_line(dense, 0);
    near((double)d.entities, 2.0 * (double)c.entities, 0.05, "entities, twice the walkers");
    near((double)d.ghosts, 2.0 * (double)c.ghosts, 0.1, "ghosts, twice the walkers");
    near(d.entity_bytes, 2.0 * c.entity_bytes, 0.35, "worlds' bytes, twice the walkers");

    /* two ranks hold two regions each */
    char *two = validate(m, "2", NULL);
    rank_line_t a = rank_line(two, 0), b = rank_line(two, 1);
    cr_assert_eq(a.entities + b.entities, c.entities, "%s", two);
    cr_assert_eq(a.ghosts + b.ghosts, c.ghosts, "%s", two);
    near(a.total + b.total, c.total, 0.01, "two ranks' totals against one rank's");
    free(cut);
    free(uncut);
    free(dense);
    free(two);
}

/* The field the section names is the one a run's stats carry. */
Test(cli_memory, the_named_peak_is_in_the_stats)
{
    const char *stats = cli_path("s.json");
    cli_result_t r = kairos("run", cli_source("examples/phold.json"), "--end", "5", "--quiet", "-o", stats, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cli_free(&r);
    json_error_t e;
    json_t *s = json_load_file(stats, 0, &e);
    cr_assert(s, "%s", e.text);
    json_t *peak = json_object_get(json_array_get(json_object_get(s, "rank_info"), 0), "peak_memory_bytes");
    cr_assert(json_is_integer(peak) && json_integer_value(peak) > 0, "rank_info[0].peak_memory_bytes");
    json_decref(s);
}
