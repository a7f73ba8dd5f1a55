/* The ODE integration engine (schedulers/ode_engine.h): accuracy against
 * closed forms (one chunk and many), every method, state events located to
 * the tick (direction, earliest wins, ties, repeated crossings),
 * determinism (bit-identical repeats, no dependence on earlier calls or on
 * the target beyond a crossing), refused descriptions and callback errors
 * reported without an abort. */
#include <criterion/criterion.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_linalg.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "schedulers/formalisms/ode_engine.h"

#define PREC UINT64_C(1000000)

static kr_time_t ticks(double units) { return (kr_time_t)llround(units * (double)PREC); }

/* ---- systems ---- */

/* y' = -k y */
static int decay_rhs(double t, const double y[], double dydt[], void *p)
{
    (void)t;
    dydt[0] = -*(const double *)p * y[0];
    return GSL_SUCCESS;
}

static int decay_jac(double t, const double y[], double *dfdy, double dfdt[], void *p)
{
    (void)t;
    (void)y;
    dfdy[0] = -*(const double *)p;
    dfdt[0] = 0.0;
    return GSL_SUCCESS;
}

/* y0' = y1, y1' = -y0: from (0, 1), y0 = sin t, y1 = cos t. */
static int osc_rhs(double t, const double y[], double dydt[], void *p)
{
    (void)t;
    (void)p;
    dydt[0] = y[1];
    dydt[1] = -y[0];
    return GSL_SUCCESS;
}

static int osc_jac(double t, const double y[], double *dfdy, double dfdt[], void *p)
{
    (void)t;
    (void)y;
    (void)p;
    dfdy[0] = 0.0, dfdy[1] = 1.0;
    dfdy[2] = -1.0, dfdy[3] = 0.0;
    dfdt[0] = dfdt[1] = 0.0;
    return GSL_SUCCESS;
}

static double y0_minus_half(double t, const double y[], void *p)
{
    (void)t;
    (void)p;
    return y[0] - 0.5;
}

static double y0_minus_08(double t, const double y[], void *p)
{
    (void)t;
    (void)p;
    return y[0] - 0.8;
}

static double y0_itself(double t, const double y[], void *p)
{
    (void)t;
    (void)p;
    return y[0];
}

static double one_k = 1.0;

static kr__ode_engine_t *decay_engine(double y0, double *k, kr_time_t start)
{
    double init[1] = {y0};
    kr_ode_desc_t d = {.dim = 1, .rhs = decay_rhs, .params = k, .initial = init};
    kr__ode_engine_t *e = kr__ode_engine_create(&d, PREC, start);
    cr_assert_not_null(e, "create failed: %s", kr_last_error());
    return e;
}

static kr__ode_engine_t *osc_engine(kr_ode_method_t m)
{
    double init[2] = {0.0, 1.0};
    kr_ode_desc_t d = {.dim = 2, .rhs = osc_rhs, .jacobian = osc_jac, .initial = init,
                       .method = m};
    kr__ode_engine_t *e = kr__ode_engine_create(&d, PREC, 0);
    cr_assert_not_null(e, "create failed: %s", kr_last_error());
    return e;
}

static void advance_ok(kr__ode_engine_t *e, kr_time_t to, const kr_ode_threshold_t *th,
                       size_t nth, int *hit)
{
    kr_status_t st = kr__ode_engine_advance(e, to, th, nth, hit);
    cr_assert_eq(st, KR_OK, "advance to %llu failed: %s", (unsigned long long)to,
                 kr_last_error());
}

static void assert_rel(double got, double want, double tol, const char *what)
{
    cr_assert(fabs(got - want) <= tol * fabs(want), "%s: got %.17g, want %.17g (rel err %g)",
              what, got, want, fabs(got - want) / fabs(want));
}

/* ---- accuracy ---- */

Test(ode, decay_one_chunk_and_many_chunks)
{
    double k = 0.5;
    kr__ode_engine_t *one = decay_engine(1.0, &k, 0);
    advance_ok(one, ticks(10), NULL, 0, NULL);
    cr_assert_eq(kr__ode_engine_time(one), ticks(10));
    assert_rel(kr__ode_engine_state(one)[0], exp(-5.0), 1e-6, "one chunk");

    kr__ode_engine_t *many = decay_engine(1.0, &k, 0);
    for (int i = 1; i <= 1000; i++) {
        kr_time_t to = (kr_time_t)i * 10000; /* 0.01 units */
        advance_ok(many, to, NULL, 0, NULL);
        cr_assert_eq(kr__ode_engine_time(many), to);
        assert_rel(kr__ode_engine_state(many)[0], exp(-k * (double)to / (double)PREC), 1e-6,
                   "chunk");
    }
    kr__ode_engine_destroy(one);
    kr__ode_engine_destroy(many);
}

Test(ode, uneven_chunks_and_a_start_tick)
{
    double k = 1.3;
    kr_time_t start = 2500001; /* 2.500001 */
    kr__ode_engine_t *e = decay_engine(2.0, &k, start);
    cr_assert_eq(kr__ode_engine_time(e), start);
    kr_time_t to = start;
    for (kr_time_t step = 1; to < start + ticks(6); step = step * 3 + 7) {
        to += step;
        advance_ok(e, to, NULL, 0, NULL);
        double dt = (double)(to - start) / (double)PREC;
        assert_rel(kr__ode_engine_state(e)[0], 2.0 * exp(-k * dt), 1e-6, "uneven chunk");
    }
    /* Advancing to the current tick does nothing. */
    double before = kr__ode_engine_state(e)[0];
    advance_ok(e, to, NULL, 0, NULL);
    cr_assert_eq(kr__ode_engine_state(e)[0], before);
    kr__ode_engine_destroy(e);
}

Test(ode, harmonic_oscillator_against_sin_cos)
{
    kr__ode_engine_t *e = osc_engine(KR_ODE_RK8PD);
    for (int i = 1; i <= 200; i++) {
        kr_time_t to = (kr_time_t)i * 100000; /* 0.1 units, up to 20 */
        advance_ok(e, to, NULL, 0, NULL);
        double t = (double)to / (double)PREC, *y = kr__ode_engine_state(e);
        cr_assert(fabs(y[0] - sin(t)) < 1e-6, "sin at %g: %.17g vs %.17g", t, y[0], sin(t));
        cr_assert(fabs(y[1] - cos(t)) < 1e-6, "cos at %g: %.17g vs %.17g", t, y[1], cos(t));
    }
    kr__ode_engine_destroy(e);
}

Test(ode, every_method_integrates_the_oscillator)
{
    static const kr_ode_method_t methods[] = {
        KR_ODE_RK8PD, KR_ODE_RKF45, KR_ODE_RKCK, KR_ODE_RK4IMP, KR_ODE_MSBDF, KR_ODE_RK2,
        KR_ODE_RK4, KR_ODE_RK1IMP, KR_ODE_RK2IMP, KR_ODE_BSIMP, KR_ODE_MSADAMS,
    };
    for (size_t m = 0; m < sizeof methods / sizeof methods[0]; m++) {
        /* rk1imp is first order: give it a coarser target. */
        double tol = methods[m] == KR_ODE_RK1IMP ? 1e-3 : 1e-6;
        kr__ode_engine_t *e = osc_engine(methods[m]);
        advance_ok(e, ticks(1), NULL, 0, NULL);
        advance_ok(e, ticks(3), NULL, 0, NULL);
        double *y = kr__ode_engine_state(e);
        cr_assert(fabs(y[0] - sin(3.0)) < tol && fabs(y[1] - cos(3.0)) < tol,
                  "method %zu: (%.17g, %.17g) vs (%.17g, %.17g)", m, y[0], y[1], sin(3.0),
                  cos(3.0));
        kr__ode_engine_destroy(e);
    }
}

Test(ode, implicit_methods_on_decay)
{
    double k = 0.5, init[1] = {1.0};
    kr_ode_method_t ms[] = {KR_ODE_RK4IMP, KR_ODE_MSBDF};
    for (size_t m = 0; m < 2; m++) {
        kr_ode_desc_t d = {.dim = 1, .rhs = decay_rhs, .jacobian = decay_jac, .params = &k,
                           .initial = init, .method = ms[m]};
        kr__ode_engine_t *e = kr__ode_engine_create(&d, PREC, 0);
        cr_assert_not_null(e, "%s", kr_last_error());
        for (int i = 1; i <= 10; i++) {
            advance_ok(e, ticks(i), NULL, 0, NULL);
            assert_rel(kr__ode_engine_state(e)[0], exp(-k * i), 1e-6, "implicit");
        }
        kr__ode_engine_destroy(e);
    }
}

Test(ode, the_owner_may_change_the_state_between_advances)
{
    kr__ode_engine_t *e = decay_engine(1.0, &one_k, 0);
    advance_ok(e, ticks(5), NULL, 0, NULL);
    kr__ode_engine_state(e)[0] = 3.0;
    advance_ok(e, ticks(7), NULL, 0, NULL);
    assert_rel(kr__ode_engine_state(e)[0], 3.0 * exp(-2.0), 1e-6, "after reset");
    kr__ode_engine_destroy(e);
}

/* ---- state events ---- */

Test(ode, falling_crossing_within_one_tick)
{
    kr__ode_engine_t *e = decay_engine(1.0, &one_k, 0);
    kr_ode_threshold_t th = {y0_minus_half, -1};
    int hit = 7;
    advance_ok(e, ticks(5), &th, 1, &hit);
    cr_assert_eq(hit, 0);
    double truth = log(2.0) * (double)PREC; /* 693147.18... */
    kr_time_t at = kr__ode_engine_time(e);
    cr_assert((double)at >= truth && (double)at < truth + 1.0, "hit at tick %llu, truth %.3f",
              (unsigned long long)at, truth);
    double y = kr__ode_engine_state(e)[0];
    cr_assert_lt(y, 0.5, "the threshold has crossed at the reported tick");
    assert_rel(y, exp(-(double)at / (double)PREC), 1e-9, "state at the hit");

    /* Continuing: no crossing left, the state reaches the target. */
    advance_ok(e, ticks(5), &th, 1, &hit);
    cr_assert_eq(hit, -1);
    cr_assert_eq(kr__ode_engine_time(e), ticks(5));
    assert_rel(kr__ode_engine_state(e)[0], exp(-5.0), 1e-6, "after the event");
    kr__ode_engine_destroy(e);
}

Test(ode, rising_only_ignores_falling_and_fires_on_rising)
{
    kr__ode_engine_t *e = decay_engine(1.0, &one_k, 0);
    kr_ode_threshold_t rising = {y0_minus_half, +1};
    int hit = 7;
    advance_ok(e, ticks(5), &rising, 1, &hit);
    cr_assert_eq(hit, -1, "a falling crossing must not fire a rising-only threshold");
    cr_assert_eq(kr__ode_engine_time(e), ticks(5));
    kr__ode_engine_destroy(e);

    double grow = -1.0; /* y' = y */
    e = decay_engine(0.25, &grow, 0);
    advance_ok(e, ticks(5), &rising, 1, &hit);
    cr_assert_eq(hit, 0);
    double truth = log(2.0) * (double)PREC;
    kr_time_t at = kr__ode_engine_time(e);
    cr_assert((double)at >= truth && (double)at < truth + 1.0, "rising at %llu, truth %.3f",
              (unsigned long long)at, truth);
    cr_assert_gt(kr__ode_engine_state(e)[0], 0.5);
    kr__ode_engine_destroy(e);

    /* Falling-only on a rising signal does not fire either. */
    e = decay_engine(0.25, &grow, 0);
    kr_ode_threshold_t falling = {y0_minus_half, -1};
    advance_ok(e, ticks(1), &falling, 1, &hit);
    cr_assert_eq(hit, -1);
    kr__ode_engine_destroy(e);
}

Test(ode, earliest_of_two_thresholds_wins_and_ties_go_to_the_lowest_index)
{
    kr__ode_engine_t *e = decay_engine(1.0, &one_k, 0);
    kr_ode_threshold_t th[2] = {{y0_minus_half, 0}, {y0_minus_08, 0}};
    int hit = 7;
    advance_ok(e, ticks(5), th, 2, &hit);
    cr_assert_eq(hit, 1, "y = 0.8 comes first");
    double truth = log(1.25) * (double)PREC;
    kr_time_t at = kr__ode_engine_time(e);
    cr_assert((double)at >= truth && (double)at < truth + 1.0, "at %llu, truth %.3f",
              (unsigned long long)at, truth);
    advance_ok(e, ticks(5), th, 2, &hit);
    cr_assert_eq(hit, 0, "then y = 0.5");
    truth = log(2.0) * (double)PREC;
    at = kr__ode_engine_time(e);
    cr_assert((double)at >= truth && (double)at < truth + 1.0, "at %llu, truth %.3f",
              (unsigned long long)at, truth);
    kr__ode_engine_destroy(e);

    e = decay_engine(1.0, &one_k, 0);
    kr_ode_threshold_t same[3] = {{y0_minus_08, +1}, {y0_minus_half, 0}, {y0_minus_half, -1}};
    advance_ok(e, ticks(5), same, 3, &hit);
    cr_assert_eq(hit, 1, "0 is rising-only; 1 and 2 tie: the lowest index");
    kr__ode_engine_destroy(e);
}

Test(ode, sine_crossing_zero_repeatedly)
{
    kr__ode_engine_t *e = osc_engine(KR_ODE_RK8PD);
    kr_ode_threshold_t th = {y0_itself, 0};
    int hit = 7;
    /* sin is exactly 0 at the start: that does not fire. */
    for (int j = 1; j <= 3; j++) {
        advance_ok(e, ticks(10), &th, 1, &hit);
        cr_assert_eq(hit, 0, "crossing %d", j);
        double truth = j * M_PI * (double)PREC;
        kr_time_t at = kr__ode_engine_time(e);
        cr_assert((double)at >= truth && (double)at < truth + 1.0,
                  "crossing %d at %llu, truth %.3f", j, (unsigned long long)at, truth);
        double y0 = kr__ode_engine_state(e)[0];
        cr_assert(j % 2 ? y0 < 0.0 : y0 > 0.0, "crossing %d: sign of %g", j, y0);
    }
    advance_ok(e, ticks(10), &th, 1, &hit);
    cr_assert_eq(hit, -1);
    cr_assert_eq(kr__ode_engine_time(e), ticks(10));
    kr__ode_engine_destroy(e);
}

Test(ode, a_threshold_zero_at_the_start_takes_its_first_nonzero_sign)
{
    /* y = 0.5 at the start, falling: g starts at 0 then goes negative, which
     * is its first sign, not a crossing. */
    kr__ode_engine_t *e = decay_engine(0.5, &one_k, 0);
    kr_ode_threshold_t th = {y0_minus_half, 0};
    int hit = 7;
    advance_ok(e, ticks(3), &th, 1, &hit);
    cr_assert_eq(hit, -1);
    kr__ode_engine_destroy(e);
}

/* y' = 0 and a first step of 0.5000005 units: the first GSL step ends
 * between ticks 500000 and 500001, inside a dip of g = (t - a)(t - b). */
static int still_rhs(double t, const double y[], double dydt[], void *p)
{
    (void)t;
    (void)y;
    (void)p;
    dydt[0] = 0.0;
    return GSL_SUCCESS;
}

static double dip_a, dip_b;
static double dip(double t, const double y[], void *p)
{
    (void)y;
    (void)p;
    return (t - dip_a) * (t - dip_b);
}

static kr_time_t dip_hit(double a, double b, int *hit)
{
    dip_a = a, dip_b = b;
    double init[1] = {0.0};
    kr_ode_desc_t d = {.dim = 1, .rhs = still_rhs, .initial = init, .initial_step = 0.5000005};
    kr__ode_engine_t *e = kr__ode_engine_create(&d, PREC, 0);
    cr_assert_not_null(e);
    kr_ode_threshold_t th = {dip, 0};
    advance_ok(e, ticks(2), &th, 1, hit);
    kr_time_t at = kr__ode_engine_time(e);
    kr__ode_engine_destroy(e);
    return at;
}

Test(ode, crossings_between_ticks)
{
    int hit;
    /* The dip holds no tick: nothing fires. */
    cr_assert_eq(dip_hit(0.5000002, 0.5000008, &hit), ticks(2));
    cr_assert_eq(hit, -1);
    /* The dip covers the tick after the step's end. */
    cr_assert_eq(dip_hit(0.5000002, 0.5000018, &hit), 500001);
    cr_assert_eq(hit, 0);
    /* The dip covers only the tick before it. */
    cr_assert_eq(dip_hit(0.4999995, 0.5000007, &hit), 500000);
    cr_assert_eq(hit, 0);
}

/* ---- determinism ---- */

Test(ode, same_calls_give_bit_identical_states)
{
    double r[2][2];
    for (int run = 0; run < 2; run++) {
        kr__ode_engine_t *e = osc_engine(KR_ODE_RK8PD);
        advance_ok(e, ticks(3), NULL, 0, NULL);
        advance_ok(e, ticks(10), NULL, 0, NULL);
        memcpy(r[run], kr__ode_engine_state(e), sizeof r[run]);
        kr__ode_engine_destroy(e);
    }
    cr_assert_eq(memcmp(r[0], r[1], sizeof r[0]), 0, "two identical runs differ");

    kr__ode_engine_t *e = osc_engine(KR_ODE_RK8PD);
    advance_ok(e, ticks(10), NULL, 0, NULL);
    double *y = kr__ode_engine_state(e);
    cr_assert(fabs(y[0] - r[0][0]) < 1e-7 && fabs(y[1] - r[0][1]) < 1e-7,
              "one chunk and two chunks should agree within tolerance");
    kr__ode_engine_destroy(e);
}

/* An advance from a tick depends on the state there, not on how the engine
 * got there: a fresh engine created at that state gives the same bits. Run
 * for every method (the multistep ones keep history in GSL). */
Test(ode, an_advance_does_not_depend_on_earlier_calls)
{
    for (kr_ode_method_t m = KR_ODE_RK8PD; m <= KR_ODE_MSADAMS; m++) {
        kr__ode_engine_t *a = osc_engine(m);
        advance_ok(a, ticks(1), NULL, 0, NULL);
        advance_ok(a, ticks(2), NULL, 0, NULL);
        double init[2];
        memcpy(init, kr__ode_engine_state(a), sizeof init);
        kr_ode_desc_t d = {.dim = 2, .rhs = osc_rhs, .jacobian = osc_jac, .initial = init,
                           .method = m};
        kr__ode_engine_t *b = kr__ode_engine_create(&d, PREC, ticks(2));
        cr_assert_not_null(b);
        advance_ok(a, ticks(5), NULL, 0, NULL);
        advance_ok(b, ticks(5), NULL, 0, NULL);
        cr_assert_eq(memcmp(kr__ode_engine_state(a), kr__ode_engine_state(b), sizeof init), 0,
                     "method %d: history leaked into the advance", (int)m);
        kr__ode_engine_destroy(a);
        kr__ode_engine_destroy(b);
    }
}

Test(ode, the_crossing_does_not_depend_on_the_target)
{
    kr_ode_threshold_t th = {y0_minus_half, 0};
    kr__ode_engine_t *a = decay_engine(1.0, &one_k, 0);
    kr__ode_engine_t *b = decay_engine(1.0, &one_k, 0);
    int ha, hb;
    advance_ok(a, ticks(5), &th, 1, &ha);
    advance_ok(b, ticks(8), &th, 1, &hb);
    cr_assert_eq(ha, 0);
    cr_assert_eq(hb, 0);
    cr_assert_eq(kr__ode_engine_time(a), kr__ode_engine_time(b));
    cr_assert_eq(memcmp(kr__ode_engine_state(a), kr__ode_engine_state(b), sizeof(double)), 0);
    kr__ode_engine_destroy(a);
    kr__ode_engine_destroy(b);

    /* Same for the oscillator's third zero. */
    kr_ode_threshold_t z = {y0_itself, 0};
    a = osc_engine(KR_ODE_RK8PD);
    b = osc_engine(KR_ODE_RK8PD);
    for (int j = 0; j < 3; j++) {
        advance_ok(a, ticks(12), &z, 1, &ha);
        advance_ok(b, ticks(40), &z, 1, &hb);
    }
    cr_assert_eq(kr__ode_engine_time(a), kr__ode_engine_time(b));
    cr_assert_eq(memcmp(kr__ode_engine_state(a), kr__ode_engine_state(b), 2 * sizeof(double)),
                 0);
    kr__ode_engine_destroy(a);
    kr__ode_engine_destroy(b);
}

/* ---- refusals and failures ---- */

static void refused(const kr_ode_desc_t *d, uint64_t precision, const char *needle)
{
    kr_clear_error();
    kr__ode_engine_t *e = kr__ode_engine_create(d, precision, 0);
    cr_assert_null(e, "a bad desc was accepted (expected: %s)", needle);
    cr_assert_eq(kr_last_status(), KR_ERR_INVALID_ARG);
    cr_assert_not_null(strstr(kr_last_error(), needle), "message '%s' lacks '%s'",
                       kr_last_error(), needle);
}

Test(ode, bad_descs_are_refused_with_a_message)
{
    double k = 1.0, init[2] = {1.0, 0.0};
    const kr_ode_desc_t good = {.dim = 1, .rhs = decay_rhs, .params = &k, .initial = init};
    kr_ode_desc_t d;

    refused(NULL, PREC, "description");
    d = good, d.dim = 0;
    refused(&d, PREC, "dim");
    d = good, d.rhs = NULL;
    refused(&d, PREC, "rhs");
    d = good, d.initial = NULL;
    refused(&d, PREC, "initial");
    refused(&good, 0, "precision");
    d = good, d.abs_tol = -1e-9;
    refused(&d, PREC, "abs_tol");
    d = good, d.rel_tol = NAN;
    refused(&d, PREC, "rel_tol");
    d = good, d.abs_tol = INFINITY;
    refused(&d, PREC, "abs_tol");
    d = good, d.initial_step = -0.1;
    refused(&d, PREC, "initial_step");
    d = good, d.method = (kr_ode_method_t)99;
    refused(&d, PREC, "method");
    d = good, d.method = KR_ODE_RK4IMP;
    refused(&d, PREC, "jacobian");
    d = good, d.method = KR_ODE_MSBDF;
    refused(&d, PREC, "msbdf needs a jacobian");
    d = good, d.method = KR_ODE_BSIMP;
    refused(&d, PREC, "jacobian");
    double bad[1] = {NAN};
    d = good, d.initial = bad;
    refused(&d, PREC, "initial[0]");

    /* Explicit methods are fine without one; tolerances given explicitly too. */
    d = good, d.method = KR_ODE_MSADAMS, d.abs_tol = 1e-8, d.rel_tol = 1e-8;
    kr__ode_engine_t *e = kr__ode_engine_create(&d, PREC, 0);
    cr_assert_not_null(e, "%s", kr_last_error());
    cr_assert_eq(kr__ode_engine_dim(e), 1);
    kr__ode_engine_destroy(e);
    kr__ode_engine_destroy(NULL);
}

Test(ode, bad_advances_are_refused)
{
    kr__ode_engine_t *e = decay_engine(1.0, &one_k, ticks(2));
    int hit;
    cr_assert_eq(kr__ode_engine_advance(e, ticks(1), NULL, 0, NULL), KR_ERR_INVALID_ARG);
    cr_assert_not_null(strstr(kr_last_error(), "backwards"));
    kr_ode_threshold_t no_g = {NULL, 0};
    cr_assert_eq(kr__ode_engine_advance(e, ticks(3), &no_g, 1, &hit), KR_ERR_INVALID_ARG);
    kr_ode_threshold_t bad_dir = {y0_minus_half, 2};
    cr_assert_eq(kr__ode_engine_advance(e, ticks(3), &bad_dir, 1, &hit), KR_ERR_INVALID_ARG);
    cr_assert_not_null(strstr(kr_last_error(), "direction"));
    cr_assert_eq(kr__ode_engine_advance(e, ticks(3), NULL, 1, &hit), KR_ERR_INVALID_ARG);
    cr_assert_eq(kr__ode_engine_time(e), ticks(2), "a refused advance moves nothing");
    kr__ode_engine_destroy(e);
}

static int failing_rhs(double t, const double y[], double dydt[], void *p)
{
    (void)p;
    if (t > 1.0)
        return *(int *)p;
    dydt[0] = -y[0];
    return GSL_SUCCESS;
}

Test(ode, an_rhs_error_is_reported_not_aborted)
{
    int codes[] = {GSL_EBADFUNC, GSL_EFAILED, 42};
    for (size_t c = 0; c < 3; c++) {
        double init[1] = {1.0};
        kr_ode_desc_t d = {.dim = 1, .rhs = failing_rhs, .params = &codes[c], .initial = init};
        kr__ode_engine_t *e = kr__ode_engine_create(&d, PREC, 0);
        cr_assert_not_null(e);
        advance_ok(e, ticks(1), NULL, 0, NULL); /* fine up to t = 1 */
        double before = kr__ode_engine_state(e)[0];
        int hit = 7;
        kr_ode_threshold_t th = {y0_minus_half, 0};
        kr_status_t st = kr__ode_engine_advance(e, ticks(3), &th, 1, &hit);
        cr_assert_eq(st, KR_ERR_NUMERIC, "code %d: status %d", codes[c], (int)st);
        cr_assert_not_null(strstr(kr_last_error(), "right-hand side returned"), "%s",
                           kr_last_error());
        cr_assert_eq(hit, -1);
        cr_assert_eq(kr__ode_engine_time(e), ticks(1), "the state stays where it was");
        cr_assert_eq(kr__ode_engine_state(e)[0], before);
        kr__ode_engine_destroy(e);
    }
}

static int failing_jac(double t, const double y[], double *dfdy, double dfdt[], void *p)
{
    (void)t;
    (void)y;
    (void)dfdy;
    (void)dfdt;
    (void)p;
    return GSL_EBADFUNC;
}

Test(ode, a_jacobian_error_is_reported)
{
    double init[1] = {1.0}, k = 1.0;
    kr_ode_desc_t d = {.dim = 1, .rhs = decay_rhs, .jacobian = failing_jac, .params = &k,
                       .initial = init, .method = KR_ODE_MSBDF};
    kr__ode_engine_t *e = kr__ode_engine_create(&d, PREC, 0);
    cr_assert_not_null(e);
    cr_assert_eq(kr__ode_engine_advance(e, ticks(1), NULL, 0, NULL), KR_ERR_NUMERIC);
    cr_assert_not_null(strstr(kr_last_error(), "jacobian returned"), "%s", kr_last_error());
    kr__ode_engine_destroy(e);
}

static double nan_threshold(double t, const double y[], void *p)
{
    (void)y;
    (void)p;
    return t > 0.5 ? NAN : 1.0;
}

static int blowup_rhs(double t, const double y[], double dydt[], void *p)
{
    (void)t;
    (void)p;
    dydt[0] = y[0] * y[0]; /* y = 1 / (1 - t): infinite at t = 1 */
    return GSL_SUCCESS;
}

Test(ode, nan_thresholds_and_blowups_are_errors)
{
    kr__ode_engine_t *e = decay_engine(1.0, &one_k, 0);
    kr_ode_threshold_t th = {nan_threshold, 0};
    int hit;
    cr_assert_eq(kr__ode_engine_advance(e, ticks(1), &th, 1, &hit), KR_ERR_NUMERIC);
    cr_assert_not_null(strstr(kr_last_error(), "NaN"), "%s", kr_last_error());
    cr_assert_eq(kr__ode_engine_time(e), 0);
    kr__ode_engine_destroy(e);

    double init[1] = {1.0};
    kr_ode_desc_t d = {.dim = 1, .rhs = blowup_rhs, .initial = init};
    e = kr__ode_engine_create(&d, PREC, 0);
    cr_assert_not_null(e);
    kr_status_t st = kr__ode_engine_advance(e, ticks(2), NULL, 0, NULL);
    cr_assert_eq(st, KR_ERR_NUMERIC, "%s", kr_last_error());
    cr_assert_eq(kr__ode_engine_time(e), 0);
    cr_assert_eq(kr__ode_engine_state(e)[0], 1.0);
    kr__ode_engine_destroy(e);
}

/* GSL's default handler aborts; creating an engine turns it off, so a GSL
 * failure comes back as a status (here a singular LU solve, which the
 * implicit methods can meet). */
Test(ode, creating_an_engine_turns_gsls_aborting_handler_off)
{
    kr__ode_engine_t *e = decay_engine(1.0, &one_k, 0);
    double a[4] = {1, 2, 2, 4};
    gsl_matrix_view m = gsl_matrix_view_array(a, 2, 2);
    gsl_permutation *p = gsl_permutation_alloc(2);
    gsl_vector *b = gsl_vector_calloc(2), *x = gsl_vector_alloc(2);
    int signum;
    gsl_linalg_LU_decomp(&m.matrix, p, &signum);
    cr_assert_eq(gsl_linalg_LU_solve(&m.matrix, p, b, x), GSL_EDOM);
    gsl_vector_free(b);
    gsl_vector_free(x);
    gsl_permutation_free(p);
    kr__ode_engine_destroy(e);
}

static int app_handler_calls;
static void app_handler(const char *reason, const char *file, int line, int gsl_errno)
{
    (void)reason;
    (void)file;
    (void)line;
    (void)gsl_errno;
    app_handler_calls++;
}

Test(ode, an_application_gsl_handler_is_kept)
{
    gsl_set_error_handler(app_handler);
    kr__ode_engine_t *e = decay_engine(1.0, &one_k, 0);
    cr_assert_eq(gsl_set_error_handler(NULL), app_handler);
    kr__ode_engine_destroy(e);
}
