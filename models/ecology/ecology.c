/* "ecology": plants and herbivore swarms on a width x height grid, in the
 * spirit of PHIDS (docs/ecology.md lists the rules and every difference).
 *
 * Every rule is local so that a world cut into regions computes what the
 * uncut world does:
 *  - what an agent reads outside its own cell comes from the fields of the
 *    previous step (plant energy, plant count, flow, signal), which the
 *    halo carries across region borders;
 *  - what it changes is its own state, the agents of its own cell (which
 *    one region owns; they act in id order) and agents it creates, whose
 *    ids derive from the parent (kr_region_child_id);
 *  - its random draws come from kr_region_rng (seed, agent id, step);
 *  - begin_step computes the fields of an own cell from the agents there
 *    at the start of the step, which is the state at the end of the
 *    previous step whatever the cut (migrants have arrived), and settles
 *    seeds that landed on one cell by (birth step, id).
 * Newborns are invisible within the step of their birth (they may sit on a
 * neighbour's cell, still in transit), so nobody can tell whether a seed
 * crossed a border. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kairos/kairos.h"
#include "models/ecology/ecology.h"

#define ECOLOGY_CONTEXT "ecology.state"
/* The extra word of the birth streams: no step number reaches it. */
#define BIRTH UINT64_MAX
/* Fixed-point plant energy in the per-step series: exact sums in any order. */
#define ENERGY_DECIMALS 6
#define ENERGY_SCALE 1e6
/* The range of energies (and their parameters), so that an energy in
 * fixed point (ENERGY_SCALE) and sums over many agents fit in 64 bits, and
 * births and casualties (energy / energy_min) in an int64. */
#define ENERGY_RANGE ">= 0, <= 1000000"
/* Values below this are zero (PHIDS's flow and signal floors). */
#define FLOOR 1e-4

enum { F_ENERGY = KR__ECOLOGY_ENERGY, F_FLOW = KR__ECOLOGY_FLOW, F_SIGNAL = KR__ECOLOGY_SIGNAL,
       F_PLANTS = KR__ECOLOGY_PLANTS, F_COUNT = KR__ECOLOGY_FIELDS };
enum { S_PLANTS, S_SWARMS, S_HERBIVORES, S_ENERGY, S_COUNT };

typedef kr__ecology_plant_t plant_t;
typedef kr__ecology_swarm_t swarm_t;

/* The kind's state (kr_sim_state): its parameters, read by the runtime
 * from the table below. */
typedef struct params {
    int64_t width, height, swarms, swarm_population, seed_interval, sweeps, repel_steps, split_population;
    double plant_density, plant_energy, growth, max_energy, survival, seed_cost, seed_energy, seed_min_distance,
        seed_max_distance, swarm_energy, consumption, efficiency, energy_min, upkeep, divisor, flow_weight,
        signal_weight, emit, diffusion, decay, repel_threshold;
} params_t;

typedef struct agent_ref {
    uint64_t id;
    kr_entity_t e;
} agent_ref_t;

/* The region's working state, a context of its own: its fini frees the
 * buffers, which no state slot holds. */
typedef struct ecology {
    const params_t *p;
    uint32_t halo;
    kr_region_t *region;
    kr_world_t *world;
    kr_component_t plant_c, swarm_c;
    double *sweep_a, *sweep_b;   /* flow relaxation scratch, stored cells */
    uint32_t *fed;               /* plants fed on this step, per own cell (stored indexing) */
    agent_ref_t *cell;           /* one cell's agents, by id */
    size_t cell_cap;
    /* eco->cell holds the plants of own cell (plants_x, plants_y) as its
     * first swarm of step plants_step found them (cell_plants) */
    bool plants_cached;
    int32_t plants_x, plants_y;
    int64_t plants_step;
    size_t plants_count;
    int64_t *series[S_COUNT];    /* per step, this region's part */
    size_t series_len, series_cap;
    /* counters, this region */
    uint64_t seeds, seeds_lost, plant_deaths, plants_eaten, splits, starved;
    kr_rng_t *birth;             /* placing the swarms at setup */
    uint64_t seed;
} ecology_t;

static uint64_t mix(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static uint64_t double_bits(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

static bool in_world(const ecology_t *eco, int32_t x, int32_t y)
{
    return x >= 0 && y >= 0 && x < eco->p->width && y < eco->p->height;
}

static int by_id(const void *a, const void *b)
{
    uint64_t x = ((const agent_ref_t *)a)->id, y = ((const agent_ref_t *)b)->id;
    return (x > y) - (x < y);
}

static plant_t *plant_of(const ecology_t *eco, kr_entity_t a);

/* The agents of own cell (x, y), by id, in eco->cell, or only its plants;
 * false when out of memory. A copy: acts may destroy and create agents
 * meanwhile. A swarm asks for the plants alone: the whole cell, copied
 * and sorted for every swarm in it, made a crowded cell's step take time
 * in the square of its swarms (100,000 swarms on 10 x 10 cells: 11 s a
 * step). */
static bool cell_agents(ecology_t *eco, int32_t x, int32_t y, bool plants_only, size_t *count)
{
    eco->plants_cached = false;
    size_t k;
    const kr_entity_t *in = kr_spatial_cell_entities(eco->world, (kr_cell_t){ x, y }, &k);
    if (k > eco->cell_cap) {
        size_t cap = eco->cell_cap ? eco->cell_cap : 16;
        while (cap < k) cap *= 2;
        agent_ref_t *c = realloc(eco->cell, cap * sizeof *c);
        if (!c) return false;
        eco->cell = c;
        eco->cell_cap = cap;
    }
    size_t n = 0;
    for (size_t i = 0; i < k; i++) {
        if (plants_only && !plant_of(eco, in[i])) continue;
        uint64_t id = kr_region_agent_id(eco->region, in[i]);
        if (!id) continue;
        if (k > 32) {
            eco->cell[n++] = (agent_ref_t){ id, in[i] };
            continue;
        }
        /* insertion by id: cells mostly hold a few agents */
        size_t j = n++;
        while (j > 0 && eco->cell[j - 1].id > id) {
            eco->cell[j] = eco->cell[j - 1];
            j--;
        }
        eco->cell[j] = (agent_ref_t){ id, in[i] };
    }
    /* a crowded cell: sorted at once (ids are unique, so the order is the
     * same), as insertion took time in the square of the agents there */
    if (k > 32 && n > 1) qsort(eco->cell, n, sizeof *eco->cell, by_id);
    *count = n;
    return true;
}

/* The plants of own cell (x, y) for a swarm acting there in `step`, by
 * id, in eco->cell: the list its first swarm of the step gathered. The
 * swarms of a cell act one after another (regions/step.c: cells in turn,
 * the agents of a cell by id), and the list stays what each of them would
 * gather anew, as far as what a swarm reads of it goes: it holds every
 * plant of the cell, edible or not (edible decides as it is read); the
 * only plants that enter a cell during a step are born in it (plants do
 * not move), and those are not edible before the next; one eaten or dead
 * since is no plant (edible). Gathering it for every swarm looked at
 * every agent of the cell each time: 100,000 swarms on 10 x 10 cells
 * spent four fifths of a step in kr_component_has (bench/README.md,
 * "Ecology"). */
static bool cell_plants(ecology_t *eco, int32_t x, int32_t y, int64_t step, size_t *count)
{
    if (eco->plants_cached && eco->plants_step == step && eco->plants_x == x && eco->plants_y == y) {
        *count = eco->plants_count;
        return true;
    }
    if (!cell_agents(eco, x, y, true, count)) return false;
    eco->plants_cached = true;
    eco->plants_x = x;
    eco->plants_y = y;
    eco->plants_step = step;
    eco->plants_count = *count;
    return true;
}

/* ---- the step's fields ---- */

static bool series_push(ecology_t *eco, const int64_t v[S_COUNT])
{
    if (eco->series_len == eco->series_cap) {
        size_t cap = eco->series_cap ? eco->series_cap * 2 : 64;
        for (int i = 0; i < S_COUNT; i++) {
            int64_t *s = realloc(eco->series[i], cap * sizeof *s);
            if (!s) return false;
            eco->series[i] = s;
        }
        eco->series_cap = cap;
    }
    for (int i = 0; i < S_COUNT; i++) eco->series[i][eco->series_len] = v[i];
    eco->series_len++;
    return true;
}

/* The flow field: `sweeps` Jacobi sweeps of f = base + w * mean(in-world
 * 4-neighbours of f), the first from the previous step's flow. Sweep j is
 * computed on the own cells widened by sweeps - j, so the last lands on
 * the own cells having read nothing beyond the halo (halo >= sweeps). */
static void relax_flow(ecology_t *eco, kr_region_t *r)
{
    const params_t *p = eco->p;
    kr_rect_t own = kr_region_rect(r), st = kr_region_stored(r);
    const double *flow = kr_region_field(r, F_FLOW), *energy = kr_region_field(r, F_ENERGY),
                 *signal = kr_region_field(r, F_SIGNAL);
    size_t area = kr_rect_area(st);
    memcpy(eco->sweep_a, flow, area * sizeof *flow);
    const double *src = eco->sweep_a;
    double *dst = eco->sweep_b;
    static const int8_t nb[4][2] = { { -1, 0 }, { 1, 0 }, { 0, -1 }, { 0, 1 } };
    for (int64_t j = 1; j <= p->sweeps; j++) {
        int32_t grow = (int32_t)(p->sweeps - j);
        kr_rect_t a = { own.x0 - grow, own.y0 - grow, own.x1 + grow, own.y1 + grow };
        if (a.x0 < st.x0) a.x0 = st.x0;
        if (a.y0 < st.y0) a.y0 = st.y0;
        if (a.x1 > st.x1) a.x1 = st.x1;
        if (a.y1 > st.y1) a.y1 = st.y1;
        for (int32_t y = a.y0; y < a.y1; y++)
            for (int32_t x = a.x0; x < a.x1; x++) {
                size_t i = kr_region_field_index(r, x, y);
                double sum = 0;
                int n = 0;
                for (int d = 0; d < 4; d++) {
                    int32_t nx = x + nb[d][0], ny = y + nb[d][1];
                    if (!in_world(eco, nx, ny)) continue;
                    sum += src[kr_region_field_index(r, nx, ny)];
                    n++;
                }
                double base = energy[i] - p->signal_weight * signal[i];
                dst[i] = base + p->flow_weight * (n ? sum / n : 0.0);
            }
        const double *t = src;
        src = dst;
        dst = (double *)t;
    }
    double *out = kr_region_field_next(r, F_FLOW);
    for (int32_t y = own.y0; y < own.y1; y++)
        for (int32_t x = own.x0; x < own.x1; x++) {
            size_t i = kr_region_field_index(r, x, y);
            double v = p->sweeps ? src[i] : flow[i];
            out[i] = fabs(v) < FLOOR ? 0.0 : v;
        }
}

/* An agent's plant or swarm; NULL when it is the other kind of agent.
 * Asked first: a kr_component_get that misses composes an error message,
 * which in a step's hot loops cost a tenth of the run. */
static plant_t *plant_of(const ecology_t *eco, kr_entity_t a)
{
    return kr_component_has(eco->world, a, eco->plant_c) ? kr_component_get(eco->world, a, eco->plant_c) : NULL;
}

static swarm_t *swarm_of(const ecology_t *eco, kr_entity_t a)
{
    return kr_component_has(eco->world, a, eco->swarm_c) ? kr_component_get(eco->world, a, eco->swarm_c) : NULL;
}

/* Explicit diffusion and decay of the previous step's signal, plus what
 * the plants of the cell that were fed on last step emit. */
static double signal_at(const ecology_t *eco, kr_region_t *r, int32_t x, int32_t y, int attacked)
{
    const params_t *p = eco->p;
    const double *s = kr_region_field(r, F_SIGNAL);
    double here = s[kr_region_field_index(r, x, y)], flux = 0;
    static const int8_t nb[4][2] = { { -1, 0 }, { 1, 0 }, { 0, -1 }, { 0, 1 } };
    for (int d = 0; d < 4; d++) {
        int32_t nx = x + nb[d][0], ny = y + nb[d][1];
        if (in_world(eco, nx, ny)) flux += s[kr_region_field_index(r, nx, ny)] - here;
    }
    double v = p->decay * (here + p->diffusion * flux) + p->emit * attacked;
    return v < FLOOR ? 0.0 : v;
}

static void begin_step(kr_region_t *r, void *arg)
{
    ecology_t *eco = arg;
    kr_rect_t own = kr_region_rect(r);
    double *energy = kr_region_field_next(r, F_ENERGY), *plants = kr_region_field_next(r, F_PLANTS),
           *signal = kr_region_field_next(r, F_SIGNAL);
    int64_t tot[S_COUNT] = { 0 };
    relax_flow(eco, r);
    for (int32_t y = own.y0; y < own.y1; y++)
        for (int32_t x = own.x0; x < own.x1; x++) {
            size_t k;
            if (!cell_agents(eco, x, y, false, &k)) {
                kr_sim_fail(kr_region_sim(r), KR_ERR_NOMEM, "ecology: out of memory");
                return;
            }
            /* Seeds that landed on one cell: the oldest plant stays, then
             * the lowest id. Seeds sown in one step can meet here, and so
             * can seeds of two steps in a row (the field is one step old). */
            size_t keep = k;
            for (size_t i = 0; i < k; i++) {
                const plant_t *pl = plant_of(eco, eco->cell[i].e);
                if (!pl) continue;
                if (keep == k) keep = i;
                else {
                    const plant_t *best = plant_of(eco, eco->cell[keep].e);
                    if (pl->born < best->born) keep = i;
                }
            }
            double e = 0;
            int n_plants = 0, attacked = 0;
            for (size_t i = 0; i < k; i++) {
                kr_entity_t a = eco->cell[i].e;
                const plant_t *pl = plant_of(eco, a);
                if (pl && i != keep) {
                    kr_entity_destroy(eco->world, a);
                    eco->seeds_lost++;
                    continue;
                }
                if (pl) {
                    e += pl->energy;
                    n_plants++;
                    tot[S_PLANTS]++;
                    tot[S_ENERGY] += llround(pl->energy * ENERGY_SCALE);
                    continue;
                }
                const swarm_t *sw = swarm_of(eco, a);
                if (sw) {
                    tot[S_SWARMS]++;
                    tot[S_HERBIVORES] += sw->population;
                }
            }
            size_t i = kr_region_field_index(r, x, y);
            /* plants fed on last step signal, even those eaten to death */
            attacked = (int)eco->fed[i];
            eco->fed[i] = 0;
            energy[i] = e;
            plants[i] = n_plants;
            signal[i] = signal_at(eco, r, x, y, attacked);
        }
    /* the state at the end of the previous step */
    if (!series_push(eco, tot)) kr_sim_fail(kr_region_sim(r), KR_ERR_NOMEM, "ecology: out of memory for the series");
}

/* ---- plants ---- */

static void plant_act(ecology_t *eco, kr_region_t *r, kr_entity_t a, uint64_t id)
{
    const params_t *p = eco->p;
    int64_t step = (int64_t)kr_region_step(r);
    int32_t x, y;
    if (!kr_region_agent_cell(r, a, &x, &y)) return;
    plant_t *pl = plant_of(eco, a);
    pl->energy = fmin(pl->energy + p->growth, p->max_energy);
    if (step - pl->last_seed >= p->seed_interval && pl->energy - p->seed_cost >= p->survival) {
        kr_rng_t *rng = kr_region_rng(r, id);
        double angle = 6.283185307179586 * kr_rng_uniform(rng);
        double d = p->seed_min_distance + (p->seed_max_distance - p->seed_min_distance) * kr_rng_uniform(rng);
        /* nearbyint rounds half to even, as Python's round in PHIDS */
        int32_t tx = x + (int32_t)nearbyint(d * cos(angle)), ty = y + (int32_t)nearbyint(d * sin(angle));
        /* occupied: a plant there at the start of the previous step (the
         * field, one step old), or the parent's own cell */
        if (in_world(eco, tx, ty) && (tx != x || ty != y) &&
            kr_region_field(r, F_PLANTS)[kr_region_field_index(r, tx, ty)] == 0) {
            pl->energy -= p->seed_cost;
            pl->last_seed = step;
            kr_entity_t c = kr_region_agent_create(r, kr_region_child_id(id, (uint64_t)step, 0), x, y);
            plant_t *cp = c ? kr_component_add(eco->world, c, eco->plant_c) : NULL;
            if (!cp || kr_region_agent_move(r, c, tx, ty)) {
                kr_sim_fail(kr_region_sim(r), kr_last_status(), "ecology: plant %llu: %s", (unsigned long long)id,
                            kr_last_error());
                return;
            }
            *cp = (plant_t){ .energy = p->seed_energy, .born = step, .last_seed = step, .attacked = -1 };
            eco->seeds++;
            pl = plant_of(eco, a); /* the add may have moved it */
        }
    }
    if (pl->energy < p->survival) {
        kr_entity_destroy(eco->world, a);
        eco->plant_deaths++;
    }
}

/* ---- swarms ---- */

/* The cell itself and its in-world 4-neighbours, PHIDS's order. */
static int candidates(const ecology_t *eco, int32_t x, int32_t y, int32_t out[5][2])
{
    static const int8_t d[5][2] = { { 0, 0 }, { -1, 0 }, { 1, 0 }, { 0, -1 }, { 0, 1 } };
    int n = 0;
    for (int i = 0; i < 5; i++)
        if (in_world(eco, x + d[i][0], y + d[i][1])) {
            out[n][0] = x + d[i][0];
            out[n][1] = y + d[i][1];
            n++;
        }
    return n;
}

static int pick(kr_rng_t *rng, const double *w, int n)
{
    double total = 0;
    for (int i = 0; i < n; i++) total += w[i];
    double u = kr_rng_uniform(rng) * total;
    for (int i = 0; i < n - 1; i++) {
        if (u < w[i]) return i;
        u -= w[i];
    }
    return n - 1;
}

/* A plant of the cell a swarm may eat: alive, with energy, and not born
 * this step (a seed born this step may still be in transit elsewhere).
 * The cell's list may name plants destroyed since it was gathered
 * (cell_plants): asked first whether they live, they cost no error
 * message (which kr_component_has composes for a destroyed entity). */
static plant_t *edible(ecology_t *eco, kr_entity_t e, int64_t step)
{
    if (!kr_entity_alive(eco->world, e)) return NULL;
    plant_t *pl = plant_of(eco, e);
    return pl && pl->energy > 0 && pl->born < step ? pl : NULL;
}

static void swarm_act(ecology_t *eco, kr_region_t *r, kr_entity_t a, uint64_t id)
{
    const params_t *p = eco->p;
    int64_t step = (int64_t)kr_region_step(r);
    int32_t x, y;
    if (!kr_region_agent_cell(r, a, &x, &y)) return;
    kr_rng_t *rng = kr_region_rng(r, id);
    swarm_t sw = *swarm_of(eco, a);
    size_t here = kr_region_field_index(r, x, y);
    if (!sw.repelled && kr_region_field(r, F_SIGNAL)[here] >= p->repel_threshold) sw.repelled = (int32_t)p->repel_steps;
    size_t k;
    if (!cell_plants(eco, x, y, step, &k)) {
        kr_sim_fail(kr_region_sim(r), KR_ERR_NOMEM, "ecology: out of memory");
        return;
    }
    bool food = false;
    for (size_t i = 0; i < k && !food; i++) food = edible(eco, eco->cell[i].e, step) != NULL;
    int32_t cand[5][2];
    int n = candidates(eco, x, y, cand), choice = 0;
    double w[5];
    if (sw.repelled > 0) {
        for (int i = 0; i < n; i++) w[i] = 1;
        choice = pick(rng, w, n);
        sw.repelled--;
    } else if (!food) {
        const double *flow = kr_region_field(r, F_FLOW);
        double lo = INFINITY, hi = -INFINITY;
        for (int i = 0; i < n; i++) {
            w[i] = flow[kr_region_field_index(r, cand[i][0], cand[i][1])];
            lo = fmin(lo, w[i]);
            hi = fmax(hi, w[i]);
        }
        if (hi - lo < 1e-6) {
            /* a flat field: keep going the way it went */
            bool moved_before = sw.last_dx || sw.last_dy;
            for (int i = 0; i < n; i++)
                w[i] = !moved_before ? 1 : cand[i][0] - x == sw.last_dx && cand[i][1] - y == sw.last_dy ? 10 : 1;
        } else {
            for (int i = 0; i < n; i++) w[i] = w[i] - lo + 1e-6;
        }
        choice = pick(rng, w, n);
    }
    bool moved = cand[choice][0] != x || cand[choice][1] != y;
    if (moved) {
        sw.last_dx = cand[choice][0] - x;
        sw.last_dy = cand[choice][1] - y;
        if (kr_region_agent_move(r, a, cand[choice][0], cand[choice][1])) {
            kr_sim_fail(kr_region_sim(r), kr_last_status(), "ecology: swarm %llu: %s", (unsigned long long)id,
                    kr_last_error());
            return;
        }
    } else {
        /* feed on the cell's plants, by id */
        bool ate = false;
        for (size_t i = 0; i < k; i++) {
            plant_t *pl = edible(eco, eco->cell[i].e, step);
            if (!pl) continue;
            double consumed = fmin(p->consumption * (double)sw.population, pl->energy);
            sw.energy += consumed * p->efficiency;
            pl->energy -= consumed;
            pl->attacked = step;
            if (consumed > 0) eco->fed[here]++;
            ate = ate || consumed > 0;
            if (pl->energy < p->survival) {
                kr_entity_destroy(eco->world, eco->cell[i].e);
                eco->plants_eaten++;
            }
        }
        if (ate) sw.repelled = 0;
    }
    /* upkeep, starvation */
    sw.energy -= (double)sw.population * p->energy_min * p->upkeep;
    if (sw.energy < 0) {
        double deficit = -sw.energy;
        double lost = ceil(deficit / p->energy_min);
        int64_t casualties = lost < (double)sw.population ? (int64_t)lost : sw.population;
        sw.population -= casualties;
        sw.energy = fmax(0.0, (double)casualties * p->energy_min - deficit);
    }
    if (sw.population <= 0) {
        kr_entity_destroy(eco->world, a);
        eco->starved++;
        return;
    }
    /* reproduction from the energy above the population's minimum */
    if (sw.energy > (double)sw.population * p->energy_min) {
        double c = fmax(p->energy_min, p->energy_min * p->divisor);
        double spare = floor((sw.energy - (double)sw.population * p->energy_min) / c);
        int64_t born = spare < 1e12 ? (int64_t)spare : (int64_t)1e12;
        sw.population += born;
        sw.energy -= (double)born * c;
    }
    swarm_t child = { 0 };
    bool split = sw.population >= p->split_population;
    if (split) {
        child.population = sw.population / 2;
        sw.population -= child.population;
        child.energy = sw.energy / 2;
        sw.energy /= 2;
    }
    *swarm_of(eco, a) = sw;
    if (!split) return;
    /* the child walks off from the cell where the parent started the step */
    n = candidates(eco, x, y, cand);
    for (int i = 0; i < n; i++) w[i] = 1;
    choice = pick(rng, w, n);
    kr_entity_t c = kr_region_agent_create(r, kr_region_child_id(id, (uint64_t)step, 0), x, y);
    swarm_t *cs = c ? kr_component_add(eco->world, c, eco->swarm_c) : NULL;
    if (!cs || kr_region_agent_move(r, c, cand[choice][0], cand[choice][1])) {
        kr_sim_fail(kr_region_sim(r), kr_last_status(), "ecology: swarm %llu: %s", (unsigned long long)id,
                    kr_last_error());
        return;
    }
    *cs = child;
    eco->splits++;
}

static void act(kr_region_t *r, kr_entity_t a, uint64_t id, void *arg)
{
    ecology_t *eco = arg;
    if (kr_component_has(eco->world, a, eco->plant_c)) plant_act(eco, r, a, id);
    else if (kr_component_has(eco->world, a, eco->swarm_c)) swarm_act(eco, r, a, id);
}

/* The digest word: the exact bits of the energy, and a swarm's population. */
static uint64_t digest_word(kr_region_t *r, kr_entity_t a, void *arg)
{
    ecology_t *eco = arg;
    (void)r;
    const plant_t *pl = plant_of(eco, a);
    if (pl) return mix(double_bits(pl->energy) ^ 0x706c616e74ULL);
    const swarm_t *sw = swarm_of(eco, a);
    if (sw) return mix(double_bits(sw->energy) ^ mix((uint64_t)sw->population ^ 0x737761726dULL));
    return 0;
}

/* ---- registration and setup ---- */

static void context_fini(kr_sim_t *sim, void *context)
{
    (void)sim;
    ecology_t *eco = context;
    free(eco->sweep_a);
    free(eco->sweep_b);
    free(eco->fed);
    free(eco->cell);
    for (int i = 0; i < S_COUNT; i++) free(eco->series[i]);
    kr_rng_destroy(eco->birth);
}

static kr_status_t ecology_register(kr_model_t *m)
{
    kr_status_t st = kr_region_register(m);
    if (st) return st;
    kr_registry_t *reg = kr_model_registry(m);
    if (!kr_model_context_type(m, &(kr_context_desc_t){ .name = ECOLOGY_CONTEXT, .size = sizeof(ecology_t),
                                                        .fini = context_fini }) ||
        !kr_component_register(reg, &(kr_component_desc_t){ .name = KR__ECOLOGY_PLANT, .size = sizeof(plant_t),
                                                            .align = _Alignof(plant_t) }) ||
        !kr_component_register(reg, &(kr_component_desc_t){ .name = KR__ECOLOGY_SWARM, .size = sizeof(swarm_t),
                                                            .align = _Alignof(swarm_t) }))
        return kr_last_status();
    return KR_OK;
}

static ecology_t *state_of(kr_sim_t *sim)
{
    kr_context_type_t t = kr_model_find_context_type(kr_sim_model(sim), ECOLOGY_CONTEXT);
    return t ? kr_sim_context(sim, t) : NULL;
}

/* What the table cannot say: one parameter against another. */
static kr_status_t check_params(const kr_params_t *kp, const params_t *p)
{
    char expected[200], found[48];
    if (p->seed_min_distance > p->seed_max_distance) {
        snprintf(found, sizeof found, "%g", p->seed_min_distance);
        return kr_params_error(kp, "seed_min_distance", "a number <= seed_max_distance", found);
    }
    /* The per-step plant energy is summed in fixed point (ENERGY_SCALE) in
     * an int64: a plant on every cell at the largest energy a plant can
     * have (a start, a seedling, the cap; rounding adds at most one a
     * cell) must fit. */
    const char *key = "plant_energy";
    double most = p->plant_energy;
    if (p->max_energy > most) { most = p->max_energy; key = "max_energy"; }
    if (p->seed_energy > most) { most = p->seed_energy; key = "seed_energy"; }
    double cells = (double)p->width * (double)p->height, limit = 9.2e18;
    if (cells * (most * ENERGY_SCALE + 1) <= limit) return KR_OK;
    snprintf(expected, sizeof expected, "at most %.6g on a %lld x %lld grid (the plant energy of every cell is "
             "summed exactly, in 64 bits)", floor(limit / cells - 1) / ENERGY_SCALE, (long long)p->width,
             (long long)p->height);
    snprintf(found, sizeof found, "%g", most);
    return kr_params_error(kp, key, expected, found);
}

/* Swarm id's first cell, from its own stream (seed, id, BIRTH). */
static bool place_swarm(uint64_t id, int32_t *x, int32_t *y, void *arg)
{
    ecology_t *eco = arg;
    kr_rng_reset(eco->birth, eco->seed, KR_RNG_AGENT, id, BIRTH);
    *x = (int32_t)(kr_rng_uniform(eco->birth) * (double)eco->p->width);
    *y = (int32_t)(kr_rng_uniform(eco->birth) * (double)eco->p->height);
    return true;
}

/* The initial agents whose cell this region owns: a plant with id
 * 1 + y * width + x on each cell its birth stream picks, and swarms with
 * ids width * height + 1 .. on cells drawn from theirs. */
static kr_status_t populate(ecology_t *eco, kr_sim_t *sim, const kr_params_t *kp)
{
    const params_t *p = eco->p;
    uint64_t seed = kr_model_seed(kr_sim_model(sim));
    kr_rect_t own = kr_region_rect(eco->region);
    /* one stream, re-keyed per agent: the plants' here, the swarms' in
     * place_swarm (which may run for other regions of this process too) */
    eco->seed = seed;
    if (!eco->birth && !(eco->birth = kr_rng_create(seed, KR_RNG_AGENT, 0, BIRTH))) return kr_last_status();
    kr_rng_t *rng = eco->birth;
    kr_status_t st = KR_OK;
    for (int32_t y = own.y0; !st && y < own.y1; y++)
        for (int32_t x = own.x0; !st && x < own.x1; x++) {
            uint64_t id = 1 + (uint64_t)y * (uint64_t)p->width + (uint64_t)x;
            kr_rng_reset(rng, seed, KR_RNG_AGENT, id, BIRTH);
            if (kr_rng_uniform(rng) >= p->plant_density) continue;
            kr_entity_t e = kr_region_agent_create(eco->region, id, x, y);
            plant_t *pl = e ? kr_component_add(eco->world, e, eco->plant_c) : NULL;
            if (!pl) {
                st = kr_last_status();
                break;
            }
            /* a random phase, so that plants do not all sow in one step */
            *pl = (plant_t){ .energy = p->plant_energy, .born = 0,
                             .last_seed = -(int64_t)(kr_rng_uniform(rng) * (double)p->seed_interval),
                             .attacked = -1 };
            size_t i = kr_region_field_index(eco->region, x, y);
            kr_region_field_next(eco->region, F_ENERGY)[i] = pl->energy;
            kr_region_field_next(eco->region, F_PLANTS)[i] = 1;
        }
    uint64_t first = (uint64_t)p->width * (uint64_t)p->height + 1;
    kr_region_birth_t *born = NULL;
    size_t n = 0;
    if (!st && (st = kr_region_scatter(eco->region, first, (uint64_t)p->swarms, place_swarm, eco, &born, &n)) ==
                   KR_ERR_NOMEM)
        st = kr_params_error(kp, "swarms", "a number of swarms that fits in memory", "too many");
    for (size_t i = 0; i < n && !st; i++) {
        kr_entity_t e = kr_region_agent_create(eco->region, born[i].id, born[i].x, born[i].y);
        swarm_t *sw = e ? kr_component_add(eco->world, e, eco->swarm_c) : NULL;
        if (!sw) st = kr_last_status();
        else *sw = (swarm_t){ .energy = p->swarm_energy, .population = p->swarm_population };
    }
    free(born);
    return st;
}

/* ---- render data (docs/viewer.md) ---- */

/* A plant grows with its energy, from a third of a cell to most of one. */
static void plant_style(kr_sim_t *sim, kr_entity_t e, const void *component, kr_render_agent_t *a, void *arg)
{
    (void)sim, (void)e;
    const ecology_t *eco = arg;
    const plant_t *pl = component;
    double full = eco->p->max_energy > 0 ? pl->energy / eco->p->max_energy : 1;
    a->size *= 0.35 + 0.65 * fmin(1, fmax(0, full));
}

/* A swarm grows with its population, up to the size at which it splits. */
static void swarm_style(kr_sim_t *sim, kr_entity_t e, const void *component, kr_render_agent_t *a, void *arg)
{
    (void)sim, (void)e;
    const ecology_t *eco = arg;
    const swarm_t *sw = component;
    a->size *= 0.5 + 0.5 * fmin(1, (double)sw->population / (double)eco->p->split_population);
}

/* Plants and swarms over the signal plants send out when fed on; the
 * signal's scale reaches twice the level that repels a swarm (the largest
 * double for a threshold beyond half of it: the scale must be finite). */
static kr_status_t declare_render(ecology_t *eco, kr_sim_t *sim)
{
    double top = eco->p->repel_threshold > 0 ? fmin(2 * eco->p->repel_threshold, DBL_MAX) : 1;
    kr_status_t st = kr_region_render_field(eco->region, F_SIGNAL, "signal", "blues", 0, top);
    if (!st)
        st = kr_render_layer(sim, &(kr_render_layer_desc_t){ .name = "plants", .component = eco->plant_c,
            .shape = KR_SHAPE_CIRCLE, .colour = KR_RGB(0x1a, 0x96, 0x41), .size = 0.95, .agent = plant_style,
            .arg = eco });
    if (!st)
        st = kr_render_layer(sim, &(kr_render_layer_desc_t){ .name = "swarms", .component = eco->swarm_c,
            .shape = KR_SHAPE_SQUARE, .colour = KR_RGB(0xd7, 0x19, 0x1c), .size = 0.8, .agent = swarm_style,
            .arg = eco });
    return st;
}

static kr_status_t ecology_setup(kr_sim_t *sim, const kr_params_t *kp)
{
    ecology_t *eco = state_of(sim);
    if (!eco) return kr_last_status();
    const params_t *p = eco->p = kr_sim_state(sim);
    kr_status_t st = check_params(kp, p);
    if (st) return st;
    /* The halo: how far a step reads. The flow relaxes `sweeps` cells
     * deep, seeds land up to ceil(seed_max_distance) away, and swarms,
     * the signal and the flow read the 4 neighbours. */
    uint32_t seeds = (uint32_t)ceil(p->seed_max_distance);
    eco->halo = (uint32_t)p->sweeps > seeds ? (uint32_t)p->sweeps : seeds;
    if (eco->halo < 1) eco->halo = 1;
    kr_region_desc_t d = { .width = (int32_t)p->width, .height = (int32_t)p->height, .halo = eco->halo,
                           .fields = F_COUNT, .arg = eco, .act = act, .begin_step = begin_step,
                           .digest = digest_word };
    if ((st = kr_params_region_cut(kp, p->width, p->height, &d.cut))) return st;
    /* Every cell the halo reaches must belong to a neighbouring region,
     * also around a seed or swarm that moved into one: the narrowest
     * region is at least twice the halo wide. */
    int64_t narrow = kr_region_cut_narrowest(&d.cut, p->width, p->height);
    if (narrow < 2) {
        /* (not even the least halo, 1, fits: no parameter but the cut can
         * change that) */
        char expected[160], found[96];
        snprintf(expected, sizeof expected, "a cut whose regions are at least 2 cells wide and high (each cell reads "
                 "its 4 neighbours)");
        snprintf(found, sizeof found, "%u x %u of a %lld x %lld grid: regions %lld cell%s across", d.cut.cols,
                 d.cut.rows, (long long)p->width, (long long)p->height, (long long)narrow, narrow == 1 ? "" : "s");
        return kr_params_entry_error(kp, "regions", expected, found);
    }
    if (2 * (int64_t)eco->halo > narrow) {
        char expected[128], found[48];
        const char *key = (uint32_t)p->sweeps >= seeds ? "sweeps" : "seed_max_distance";
        snprintf(expected, sizeof expected, "at most %lld (half the narrowest region of the %u x %u cut, %lld cells)",
                 (long long)(narrow / 2), d.cut.cols, d.cut.rows, (long long)narrow);
        snprintf(found, sizeof found, "%g", (uint32_t)p->sweeps >= seeds ? (double)p->sweeps : p->seed_max_distance);
        return kr_params_error(kp, key, expected, found);
    }
    if (!(eco->region = kr_region_create(sim, &d))) return kr_last_status();
    eco->world = kr_region_world(eco->region);
    kr_registry_t *reg = kr_model_registry(kr_sim_model(sim));
    eco->plant_c = kr_component_lookup(reg, KR__ECOLOGY_PLANT);
    eco->swarm_c = kr_component_lookup(reg, KR__ECOLOGY_SWARM);
    size_t area = kr_rect_area(kr_region_stored(eco->region));
    eco->sweep_a = malloc(area * sizeof *eco->sweep_a);
    eco->sweep_b = malloc(area * sizeof *eco->sweep_b);
    eco->fed = calloc(area, sizeof *eco->fed);
    if (!eco->sweep_a || !eco->sweep_b || !eco->fed)
        return kr_params_error(kp, "width", "a grid that fits in memory", "too large");
    if ((st = populate(eco, sim, kp)) || (st = declare_render(eco, sim))) return st;
    /* the initial flow: the base of the first sweep */
    kr_rect_t own = kr_region_rect(eco->region);
    for (int32_t y = own.y0; y < own.y1; y++)
        for (int32_t x = own.x0; x < own.x1; x++) {
            size_t i = kr_region_field_index(eco->region, x, y);
            kr_region_field_next(eco->region, F_FLOW)[i] = kr_region_field_next(eco->region, F_ENERGY)[i];
        }
    return KR_OK;
}

/* ---- results ---- */

/* The state now: every agent of the region's world, cells in (y, x) order
 * and ids within, so the energy sum does not depend on storage order. */
static void final_state(ecology_t *eco, int64_t tot[S_COUNT], double *energy)
{
    kr_rect_t st = kr_region_stored(eco->region);
    *energy = 0;
    /* Agents that moved in the last step stay in this world on a
     * neighbour's cell: look at the stored cells, not only the own ones. */
    for (int32_t y = st.y0; y < st.y1; y++)
        for (int32_t x = st.x0; x < st.x1; x++) {
            size_t k;
            if (!cell_agents(eco, x, y, false, &k)) return;
            for (size_t i = 0; i < k; i++) {
                const plant_t *pl = plant_of(eco, eco->cell[i].e);
                const swarm_t *sw = pl ? NULL : swarm_of(eco, eco->cell[i].e);
                if (pl) {
                    tot[S_PLANTS]++;
                    tot[S_ENERGY] += llround(pl->energy * ENERGY_SCALE);
                    *energy += pl->energy;
                } else if (sw) {
                    tot[S_SWARMS]++;
                    tot[S_HERBIVORES] += sw->population;
                }
            }
        }
}

static void ecology_report(kr_sim_t *sim, kr_report_t *rep)
{
    ecology_t *eco = state_of(sim);
    if (!eco || !eco->region) return;
    kr_region_t *r = eco->region;
    int64_t tot[S_COUNT] = { 0 };
    double energy;
    final_state(eco, tot, &energy);
    kr_report_int(rep, "region", kr_region_index(r));
    kr_report_int(rep, "plants", tot[S_PLANTS]);
    kr_report_int(rep, "swarms", tot[S_SWARMS]);
    kr_report_int(rep, "herbivores", tot[S_HERBIVORES]);
    kr_report_number(rep, "plant_energy", energy);
    kr_report_int(rep, "seeds", (int64_t)eco->seeds);
    kr_report_int(rep, "seeds_lost", (int64_t)eco->seeds_lost);
    kr_report_int(rep, "plant_deaths", (int64_t)eco->plant_deaths);
    kr_report_int(rep, "plants_eaten", (int64_t)eco->plants_eaten);
    kr_report_int(rep, "splits", (int64_t)eco->splits);
    kr_report_int(rep, "starved", (int64_t)eco->starved);
    kr_report_int(rep, "updates", (int64_t)kr_region_updates(r));
    kr_report_int(rep, "migrants_sent", (int64_t)kr_region_migrants_sent(r));
    kr_report_int(rep, "halo", eco->halo);
    /* the per-step series: steps 0 .. S, the last being the final state */
    if (series_push(eco, tot)) {
        static const char *const names[S_COUNT] = { "plants", "swarms", "herbivores", "plant_energy" };
        for (int i = 0; i < S_COUNT; i++)
            kr_report_steps(rep, names[i], eco->series[i], eco->series_len, i == S_ENERGY ? ENERGY_DECIMALS : 0);
        eco->series_len--;
    }
}

static uint64_t ecology_state_digest(kr_sim_t *sim)
{
    ecology_t *eco = state_of(sim);
    return eco && eco->region ? kr_region_state_digest(eco->region) : 0;
}

/* ---- checkpoints ----
 * Plants and swarms are agents of the world, with all their state in
 * their components; their draws come from kr_region_rng (seed, id, step),
 * which keeps nothing between steps. What changes during the run outside
 * the world lives in the region (kr_region_serialize: fields, halo,
 * counters) and in this kind's context, which has no fields: the
 * counters, the plants fed on per cell (read, and cleared, by the next
 * step's begin_step) and the per-step series so far. Not saved: the flow
 * sweeps' buffers and the cell list, scratch filled afresh before each
 * use; the params, the region, ids and the halo width are setup's; the
 * birth stream is used in setup only. */
static kr_status_t ecology_serialize(kr_sim_t *sim, kr_serializer_t *s)
{
    ecology_t *eco = state_of(sim);
    if (!eco || !eco->region) return kr_last_status();
    kr_status_t st = kr_region_serialize(eco->region, s);
    if (st) return st;
    eco->world = kr_region_world(eco->region); /* afresh, as the region takes it */
    uint64_t *counters[] = { &eco->seeds, &eco->seeds_lost, &eco->plant_deaths, &eco->plants_eaten, &eco->splits,
                             &eco->starved };
    for (size_t i = 0; i < sizeof counters / sizeof *counters; i++) kr_ser_u64(s, counters[i]);
    uint64_t area = kr_rect_area(kr_region_stored(eco->region)), saved_area = area;
    uint64_t len = eco->series_len;
    kr_ser_u64(s, &saved_area);
    if ((st = kr_ser_u64(s, &len))) return st;
    bool loading = kr_serializer_loading(s);
    if (loading && (saved_area != area || len > kr_serializer_left(s) / (8 * S_COUNT))) {
        kr_sim_fail(sim, KR_ERR_CORRUPT, "ecology: a checkpoint of another region (%llu stored cells, this one "
                    "%llu) or with a series beyond its end", (unsigned long long)saved_area,
                    (unsigned long long)area);
        return KR_ERR_CORRUPT;
    }
    for (uint64_t i = 0; i < area; i++) kr_ser_u32(s, &eco->fed[i]);
    if (loading) {
        eco->series_len = 0;
        if (len > eco->series_cap) {
            for (int k = 0; k < S_COUNT; k++) {
                int64_t *v = realloc(eco->series[k], (size_t)len * sizeof *v);
                if (!v) {
                    kr_sim_fail(sim, KR_ERR_NOMEM, "ecology: out of memory for the series");
                    return KR_ERR_NOMEM;
                }
                eco->series[k] = v;
            }
            eco->series_cap = (size_t)len;
        }
    }
    for (int k = 0; k < S_COUNT; k++)
        for (uint64_t i = 0; i < len; i++) kr_ser_i64(s, &eco->series[k][i]);
    if (loading) eco->series_len = (size_t)len;
    return kr_serializer_status(s);
}

/* One line a row; sides up to KR_REGION_MAX_SIDE, counts within an int32. */
#define P(key, type, d, r, h) KR_PARAM(params_t, key, KR_PARAM_##type, .def = d, .range = r, .help = h)
#define INT32 "<= 2147483647"
_Static_assert(KR_REGION_MAX_SIDE == 1000000, "the range of width and height");
static const kr_param_t ecology_params[] = {
    P(width, INT, "40", ">= 1, <= 1000000", "cells"),
    P(height, INT, "40", ">= 1, <= 1000000", "cells"),
    P(plant_density, NUMBER, "0.3", ">= 0, <= 1", "chance that a cell starts with a plant (id 1 + y·width + x)"),
    P(plant_energy, NUMBER, "10", ENERGY_RANGE, "a starting plant's energy"),
    P(growth, NUMBER, "1", ENERGY_RANGE, "energy a plant gains per step"),
    P(max_energy, NUMBER, "50", ENERGY_RANGE, "a plant's energy cap"),
    P(survival, NUMBER, "1", ENERGY_RANGE, "below it a plant dies"),
    P(seed_cost, NUMBER, "5", ENERGY_RANGE, "paid by the parent for a seed"),
    P(seed_energy, NUMBER, "3", ENERGY_RANGE, "given to the seedling"),
    P(seed_interval, INT, "5", ">= 1, " INT32, "steps between seeds (starting phases are random)"),
    P(seed_min_distance, NUMBER, "1", ">= 0, <= 16", "nearest a seed lands (<= seed_max_distance)"),
    P(seed_max_distance, NUMBER, "3", ">= 0, <= 16", "farthest a seed lands"),
    P(swarms, INT, "20", ">= 0, <= 100000000",
      "starting swarms (ids width·height + 1 …, cells from their birth streams)"),
    P(swarm_population, INT, "5", ">= 1, " INT32, "a starting swarm's population"),
    P(swarm_energy, NUMBER, "20", ENERGY_RANGE, "a starting swarm's energy"),
    P(consumption, NUMBER, "0.5", ENERGY_RANGE, "energy eaten per individual and step"),
    P(efficiency, NUMBER, "0.8", ">= 0, <= 1", "fraction digested"),
    P(energy_min, NUMBER, "1", ">= 0.001, <= 1000000", "energy an individual needs"),
    P(upkeep, NUMBER, "0.1", ">= 0", "fraction of energy_min an individual burns per step"),
    P(divisor, NUMBER, "2", ">= 0", "reproduction cost in units of energy_min (at least 1 unit)"),
    P(split_population, INT, "10", ">= 2, " INT32, "population at which a swarm splits"),
    P(sweeps, INT, "2", ">= 0, <= 16", "flow relaxation sweeps per step"),
    P(flow_weight, NUMBER, "0.6", ">= 0, < 1", "neighbour weight of a sweep"),
    P(signal_weight, NUMBER, "5", ">= 0", "how much the signal lowers the flow"),
    P(emit, NUMBER, "1", ">= 0", "signal emitted per plant fed on"),
    P(diffusion, NUMBER, "0.1", ">= 0, <= 0.25", "signal diffusion (<= 0.25: stability of the explicit scheme)"),
    P(decay, NUMBER, "0.85", ">= 0, <= 1", "fraction of the signal kept per step"),
    P(repel_threshold, NUMBER, "0.5", ">= 0", "signal that repels a swarm"),
    P(repel_steps, INT, "2", ">= 0, " INT32, "steps of random walk of a repelled swarm"),
    { 0 } };

const kr_kind_desc_t kr__ecology_kind = {
    .name = "ecology",
    .summary = "plants and herbivore swarms (PHIDS-like) on a grid that may be cut into regions",
    .formalism = KR_AGENT_BASED,
    .register_types = ecology_register,
    .setup = ecology_setup,
    .report = ecology_report,
    .digest = ecology_state_digest,
    .state_digest = ecology_state_digest,
    .serialize = ecology_serialize,
    /* as walkers: only its neighbouring regions' exchanges */
    .receives = (const char *const[]){ NULL },
    .state_size = sizeof(params_t),
    .params = ecology_params,
};
