/* The ODE integration engine (see ode_engine.h and include/kairos/ode.h).
 *
 * One gsl_odeiv2 driver per engine supplies the step, control and evolve
 * objects already wired together (the implicit and multistep steppers read
 * the control through the driver); the engine calls
 * gsl_odeiv2_evolve_apply itself, step by step, so that thresholds are
 * checked after every accepted step. Every integration — an advance or a
 * bisection probe — starts with gsl_odeiv2_driver_reset_hstart and the same
 * initial step, so no stepper history (the multistep methods keep a lot)
 * leaks from one call into the next. */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_odeiv2.h>

#include "schedulers/formalisms/ode_engine.h"
#include "base/error.h"
#include "base/fault.h"

#define KR__ODE_DEFAULT_TOL 1e-10
#define KR__ODE_DEFAULT_STEP 1e-6

struct kr__ode_engine {
    size_t dim;
    uint64_t precision;
    kr_time_t time;
    double initial_step;
    double abs_tol, rel_tol;  /* as given (0: the default), for kr__ode_engine_copy */
    kr_ode_method_t method;
    kr_ode_rhs_fn rhs;
    kr_ode_jac_fn jacobian;
    void *params;
    /* The first failure a callback reported during the current call, kept
     * for the message: GSL only hands back the status. */
    int fn_status;
    double fn_t;
    bool fn_is_jacobian;
    gsl_odeiv2_system sys;   /* the driver points at it */
    gsl_odeiv2_driver *drv;
    double *y;               /* the state */
    double *y_call;          /* the state when the advance began, restored on failure */
    double *y_step;          /* the state at the start of the current GSL step */
    double *y_probe;         /* a bisection probe */
    double *y_hit;           /* the earliest probe found crossed */
    signed char *sign;       /* per threshold: last nonzero sign (0: none yet), then
                              * the signs at the end of the current step */
    size_t sign_cap;         /* thresholds sign has room for */
    /* Where the last advance ended without a hit, and its signs, so that a
     * threshold exactly zero at a segment boundary keeps the sign it had
     * before it (else a crossing landing on the boundary would be lost). */
    double *y_last;
    kr_time_t time_last;
    size_t nth_last;
    bool have_last;
};

static const struct {
    const char *name;
    bool needs_jacobian;
} method_info[] = {
    [KR_ODE_RK8PD] = {"rk8pd", false},
    [KR_ODE_RKF45] = {"rkf45", false},
    [KR_ODE_RKCK] = {"rkck", false},
    [KR_ODE_RK4IMP] = {"rk4imp", true},
    [KR_ODE_MSBDF] = {"msbdf", true},
    [KR_ODE_RK2] = {"rk2", false},
    [KR_ODE_RK4] = {"rk4", false},
    [KR_ODE_RK1IMP] = {"rk1imp", true},
    [KR_ODE_RK2IMP] = {"rk2imp", true},
    [KR_ODE_BSIMP] = {"bsimp", true},
    [KR_ODE_MSADAMS] = {"msadams", false},
};
#define METHOD_COUNT (sizeof method_info / sizeof method_info[0])

static const gsl_odeiv2_step_type *step_type(kr_ode_method_t m)
{
    switch (m) {
    case KR_ODE_RK8PD: return gsl_odeiv2_step_rk8pd;
    case KR_ODE_RKF45: return gsl_odeiv2_step_rkf45;
    case KR_ODE_RKCK: return gsl_odeiv2_step_rkck;
    case KR_ODE_RK4IMP: return gsl_odeiv2_step_rk4imp;
    case KR_ODE_MSBDF: return gsl_odeiv2_step_msbdf;
    case KR_ODE_RK2: return gsl_odeiv2_step_rk2;
    case KR_ODE_RK4: return gsl_odeiv2_step_rk4;
    case KR_ODE_RK1IMP: return gsl_odeiv2_step_rk1imp;
    case KR_ODE_RK2IMP: return gsl_odeiv2_step_rk2imp;
    case KR_ODE_BSIMP: return gsl_odeiv2_step_bsimp;
    case KR_ODE_MSADAMS: return gsl_odeiv2_step_msadams;
    }
    return NULL;
}

/* GSL calls its error handler before returning an error code, and the
 * default handler aborts. Within odeiv2 that happens on allocation failure
 * and, for the implicit methods, on a singular Newton matrix
 * (gsl_linalg_LU_solve), which user input can cause; the handler cannot be
 * avoided there, and every status is checked here. So the default handler
 * goes, as GSL's manual recommends for programs that check return codes.
 * It is one process-wide pointer: an application's own handler is put
 * back, and "off" set twice is the same as once. */
static void gsl_handler_off(void)
{
    gsl_error_handler_t *previous = gsl_set_error_handler_off();
    if (previous != NULL)
        gsl_set_error_handler(previous);
}

static int rhs_trampoline(double t, const double y[], double dydt[], void *p)
{
    kr__ode_engine_t *e = p;
    int s = e->rhs(t, y, dydt, e->params);
    if (s != GSL_SUCCESS && e->fn_status == GSL_SUCCESS) {
        e->fn_status = s;
        e->fn_t = t;
        e->fn_is_jacobian = false;
    }
    return s;
}

static int jac_trampoline(double t, const double y[], double *dfdy, double dfdt[], void *p)
{
    kr__ode_engine_t *e = p;
    int s = e->jacobian(t, y, dfdy, dfdt, e->params);
    if (s != GSL_SUCCESS && e->fn_status == GSL_SUCCESS) {
        e->fn_status = s;
        e->fn_t = t;
        e->fn_is_jacobian = true;
    }
    return s;
}

static double units(const kr__ode_engine_t *e, kr_time_t ticks)
{
    return (double)ticks / (double)e->precision;
}

/* The last tick k with units(k) <= t (t >= 0). */
static kr_time_t tick_floor(const kr__ode_engine_t *e, double t)
{
    double x = floor(t * (double)e->precision);
    kr_time_t k = x <= 0.0 ? 0 : x >= 0x1p64 ? KR_TIME_NEVER : (kr_time_t)x;
    while (k > 0 && units(e, k) > t)
        k--;
    while (k < KR_TIME_NEVER && units(e, k + 1) <= t)
        k++;
    return k;
}

void kr__ode_engine_destroy(kr__ode_engine_t *e)
{
    if (!e)
        return;
    if (e->drv)
        gsl_odeiv2_driver_free(e->drv);
    free(e->y);
    free(e->y_call);
    free(e->y_step);
    free(e->y_probe);
    free(e->y_hit);
    free(e->y_last);
    free(e->sign);
    free(e);
}

static bool check_tol(double v, const char *what)
{
    if (!(v >= 0.0) || !isfinite(v)) {
        kr__fail(KR_ERR_INVALID_ARG, "ode: %s must be finite and >= 0 (0 = default), got %g",
                 what, v);
        return false;
    }
    return true;
}

kr__ode_engine_t *kr__ode_engine_create(const kr_ode_desc_t *desc, uint64_t precision,
                                       kr_time_t start)
{
    if (!desc) {
        kr__fail(KR_ERR_INVALID_ARG, "ode: no description");
        return NULL;
    }
    if (desc->dim == 0) {
        kr__fail(KR_ERR_INVALID_ARG, "ode: dim must be at least 1");
        return NULL;
    }
    if (desc->dim > SIZE_MAX / sizeof(double) / desc->dim) {
        kr__fail(KR_ERR_INVALID_ARG, "ode: dim %zu is too large", desc->dim);
        return NULL;
    }
    if (!desc->rhs) {
        kr__fail(KR_ERR_INVALID_ARG, "ode: no rhs function");
        return NULL;
    }
    if (!desc->initial) {
        kr__fail(KR_ERR_INVALID_ARG, "ode: no initial state");
        return NULL;
    }
    if (precision == 0) {
        kr__fail(KR_ERR_INVALID_ARG, "ode: precision must be at least 1 tick per unit");
        return NULL;
    }
    if ((unsigned)desc->method >= METHOD_COUNT) {
        kr__fail(KR_ERR_INVALID_ARG, "ode: unknown method %d", (int)desc->method);
        return NULL;
    }
    if (method_info[desc->method].needs_jacobian && !desc->jacobian) {
        kr__fail(KR_ERR_INVALID_ARG, "ode: method %s needs a jacobian",
                 method_info[desc->method].name);
        return NULL;
    }
    if (!check_tol(desc->abs_tol, "abs_tol") || !check_tol(desc->rel_tol, "rel_tol") ||
        !check_tol(desc->initial_step, "initial_step"))
        return NULL;
    for (size_t i = 0; i < desc->dim; i++) {
        if (!isfinite(desc->initial[i])) {
            kr__fail(KR_ERR_INVALID_ARG, "ode: initial[%zu] is %g, not a finite value", i,
                     desc->initial[i]);
            return NULL;
        }
    }

    gsl_handler_off();

    kr__ode_engine_t *e = calloc(1, sizeof *e);
    if (!e) {
        kr__fail(KR_ERR_NOMEM, "ode: out of memory");
        return NULL;
    }
    e->dim = desc->dim;
    e->precision = precision;
    e->time = start;
    e->method = desc->method;
    e->rhs = desc->rhs;
    e->jacobian = desc->jacobian;
    e->params = desc->params;
    e->initial_step = desc->initial_step > 0.0 ? desc->initial_step : KR__ODE_DEFAULT_STEP;
    e->abs_tol = desc->abs_tol;
    e->rel_tol = desc->rel_tol;
    e->sys = (gsl_odeiv2_system){
        .function = rhs_trampoline,
        .jacobian = desc->jacobian ? jac_trampoline : NULL,
        .dimension = desc->dim,
        .params = e,
    };
    size_t bytes = desc->dim * sizeof(double);
    e->y = malloc(bytes);
    e->y_call = malloc(bytes);
    e->y_step = malloc(bytes);
    e->y_probe = malloc(bytes);
    e->y_hit = malloc(bytes);
    e->y_last = malloc(bytes);
    double abs_tol = desc->abs_tol > 0.0 ? desc->abs_tol : KR__ODE_DEFAULT_TOL;
    double rel_tol = desc->rel_tol > 0.0 ? desc->rel_tol : KR__ODE_DEFAULT_TOL;
    if (e->y && e->y_call && e->y_step && e->y_probe && e->y_hit && e->y_last)
        e->drv = gsl_odeiv2_driver_alloc_y_new(&e->sys, step_type(desc->method),
                                               e->initial_step, abs_tol, rel_tol);
    if (!e->drv) {
        kr__ode_engine_destroy(e);
        kr__fail(KR_ERR_NOMEM, "ode: out of memory");
        return NULL;
    }
    memcpy(e->y, desc->initial, bytes);
    return e;
}

kr__ode_engine_t *kr__ode_engine_copy(const kr__ode_engine_t *e)
{
    kr_ode_desc_t d = { .dim = e->dim, .rhs = e->rhs, .jacobian = e->jacobian, .params = e->params,
                        .initial = e->y, .method = e->method, .abs_tol = e->abs_tol, .rel_tol = e->rel_tol,
                        .initial_step = e->initial_step };
    kr__ode_engine_t *c = kr__ode_engine_create(&d, e->precision, e->time);
    if (!c || !e->have_last) return c;
    /* The signs the thresholds had where the last advance ended, so that
     * the copy's next advance is the one the original would make (run:
     * a zero keeps the sign from before). */
    if (e->sign_cap) {
        if (!(c->sign = malloc(2 * e->sign_cap))) {
            kr__ode_engine_destroy(c);
            kr__fail(KR_ERR_NOMEM, "ode: out of memory");
            return NULL;
        }
        memcpy(c->sign, e->sign, 2 * e->sign_cap);
        c->sign_cap = e->sign_cap;
    }
    memcpy(c->y_last, e->y_last, e->dim * sizeof(double));
    c->time_last = e->time_last;
    c->nth_last = e->nth_last;
    c->have_last = true;
    return c;
}

double *kr__ode_engine_state(kr__ode_engine_t *e) { return e->y; }
size_t kr__ode_engine_dim(const kr__ode_engine_t *e) { return e->dim; }
kr_time_t kr__ode_engine_time(const kr__ode_engine_t *e) { return e->time; }

void kr__ode_engine_set_time(kr__ode_engine_t *e, kr_time_t t)
{
    e->time = t;
    gsl_odeiv2_driver_reset(e->drv);
}

/* Reports a failed GSL call, naming the callback that caused it if one did. */
static kr_status_t gsl_failure(const kr__ode_engine_t *e, int status, double t)
{
    if (e->fn_status != GSL_SUCCESS)
        return kr__fail(KR_ERR_NUMERIC, "ode: the %s returned %d at t = %.17g",
                        e->fn_is_jacobian ? "jacobian" : "right-hand side", e->fn_status,
                        e->fn_t);
    return kr__fail(KR_ERR_NUMERIC,
                    "ode: %s step failed at t = %.17g: %s (gsl status %d); the tolerance "
                    "cannot be met or the system is too stiff for this method",
                    method_info[e->method].name, t, gsl_strerror(status), status);
}

/* One accepted GSL step from *t towards t1, with the state checked. A
 * signal to stop is heard here too: a stiff system takes an explicit
 * method billions of steps for one advance (a bath with a loss of 1e9),
 * which no step of the coordinator's would end. */
static kr_status_t step(kr__ode_engine_t *e, double *t, double t1, double *y)
{
    if (kr__signal_caught) return kr__fail(KR_ERR_INTERRUPTED, "ode: interrupted");
    gsl_odeiv2_driver *d = e->drv;
    double t0 = *t;
    int s = gsl_odeiv2_evolve_apply(d->e, d->c, d->s, &e->sys, t, t1, &d->h, y);
    if (s != GSL_SUCCESS)
        return gsl_failure(e, s, t0);
    for (size_t i = 0; i < e->dim; i++)
        if (!isfinite(y[i]))
            return kr__fail(KR_ERR_NUMERIC, "ode: y[%zu] became %g at t = %.17g", i, y[i],
                            *t);
    return KR_OK;
}

static kr_status_t restart(kr__ode_engine_t *e)
{
    if (gsl_odeiv2_driver_reset_hstart(e->drv, e->initial_step) != GSL_SUCCESS)
        return kr__fail(KR_ERR_NUMERIC, "ode: could not reset the GSL driver");
    return KR_OK;
}

/* Integrates y from ta to tb (ta <= tb) afresh. */
static kr_status_t integrate(kr__ode_engine_t *e, double ta, double tb, double *y)
{
    kr_status_t st = restart(e);
    for (double t = ta; st == KR_OK && t < tb;)
        st = step(e, &t, tb, y);
    return st;
}

static int sign_of(double v) { return (v > 0.0) - (v < 0.0); }

static kr_status_t eval(const kr__ode_engine_t *e, const kr_ode_threshold_t *th, size_t i,
                        double t, const double *y, int *sign)
{
    double v = th[i].g(t, y, e->params);
    if (isnan(v))
        return kr__fail(KR_ERR_NUMERIC, "ode: threshold %zu returned NaN at t = %.17g", i, t);
    *sign = sign_of(v);
    return KR_OK;
}

static bool fires(int ref, int now, int direction)
{
    return ref != 0 && now != 0 && now != ref && (direction == 0 || direction == now);
}

/* The lowest threshold that fires at (t, y) against the signs in e->sign,
 * or -1. */
static kr_status_t first_firing(const kr__ode_engine_t *e, const kr_ode_threshold_t *th,
                                size_t nth, double t, const double *y, int *which)
{
    *which = -1;
    for (size_t i = 0; i < nth; i++) {
        int s = 0;
        kr_status_t st = eval(e, th, i, t, y, &s);
        if (st != KR_OK)
            return st;
        if (fires(e->sign[i], s, th[i].direction)) {
            *which = (int)i;
            return KR_OK;
        }
    }
    return KR_OK;
}

/* Probes tick k from the start of the step (ts, e->y_step): the state there
 * goes to e->y_probe, the firing threshold to *which. */
static kr_status_t probe(kr__ode_engine_t *e, const kr_ode_threshold_t *th, size_t nth,
                         double ts, kr_time_t k, int *which)
{
    memcpy(e->y_probe, e->y_step, e->dim * sizeof(double));
    kr_status_t st = integrate(e, ts, units(e, k), e->y_probe);
    if (st != KR_OK)
        return st;
    return first_firing(e, th, nth, units(e, k), e->y_probe, which);
}

/* A threshold fired at the end (te, e->y) of the step that began at
 * (ts, e->y_step); hi_max is the advance's target tick. Finds the first
 * tick after ts at which one fires and leaves the state there. *found is
 * false when no tick shows the crossing (it flips back within a tick). */
static kr_status_t locate(kr__ode_engine_t *e, const kr_ode_threshold_t *th, size_t nth,
                          double ts, double te, kr_time_t hi_max, int *hit, bool *found)
{
    size_t bytes = e->dim * sizeof(double);
    kr_time_t lo = tick_floor(e, ts); /* not crossed: ts is not */
    kr_time_t hi = tick_floor(e, te);
    int which = -1;
    kr_status_t st;
    *found = false;
    if (hi < hi_max && units(e, hi) < te)
        hi++; /* the first tick at or after te */
    if (units(e, hi) == te) {
        memcpy(e->y_hit, e->y, bytes);
        st = first_firing(e, th, nth, te, e->y_hit, &which);
    } else {
        st = probe(e, th, nth, ts, hi, &which);
        if (st == KR_OK && which >= 0) {
            memcpy(e->y_hit, e->y_probe, bytes);
        } else if (st == KR_OK && hi - 1 > lo) {
            /* Crossed back between te and the next tick: the tick before te
             * may still show the crossing. */
            hi--;
            st = probe(e, th, nth, ts, hi, &which);
            if (st == KR_OK && which >= 0)
                memcpy(e->y_hit, e->y_probe, bytes);
        }
    }
    if (st != KR_OK || which < 0)
        return st;
    /* lo never fires, hi does: bisect. */
    while (hi - lo > 1) {
        kr_time_t mid = lo + (hi - lo) / 2;
        int w = -1;
        st = probe(e, th, nth, ts, mid, &w);
        if (st != KR_OK)
            return st;
        if (w >= 0) {
            hi = mid;
            which = w;
            memcpy(e->y_hit, e->y_probe, bytes);
        } else {
            lo = mid;
        }
    }
    memcpy(e->y, e->y_hit, bytes);
    e->time = hi;
    *hit = which;
    *found = true;
    return KR_OK;
}

static kr_status_t run(kr__ode_engine_t *e, kr_time_t to, const kr_ode_threshold_t *th,
                       size_t nth, int *hit)
{
    size_t bytes = e->dim * sizeof(double);
    double t = units(e, e->time), t1 = units(e, to);
    kr_status_t st;
    /* Continuing exactly where the last advance stopped (same time, same
     * state, same thresholds): a zero keeps the sign from before. */
    bool carry = e->have_last && e->nth_last == nth && e->time_last == e->time &&
                 memcmp(e->y_last, e->y, bytes) == 0;
    e->have_last = false;
    for (size_t i = 0; i < nth; i++) {
        int s = 0;
        if ((st = eval(e, th, i, t, e->y, &s)) != KR_OK)
            return st;
        if (s != 0 || !carry) e->sign[i] = (signed char)s;
    }
    if ((st = restart(e)) != KR_OK)
        return st;
    while (t < t1) {
        double ts = t;
        memcpy(e->y_step, e->y, bytes);
        if ((st = step(e, &t, t1, e->y)) != KR_OK)
            return st;
        if (nth == 0)
            continue;
        bool any = false;
        signed char *now = e->sign + nth;
        for (size_t i = 0; i < nth; i++) {
            int s = 0;
            if ((st = eval(e, th, i, t, e->y, &s)) != KR_OK)
                return st;
            now[i] = (signed char)s;
            any = any || fires(e->sign[i], s, th[i].direction);
        }
        if (any) {
            bool found;
            st = locate(e, th, nth, ts, t, to, hit, &found);
            if (st != KR_OK || found)
                return st;
            /* No tick shows the crossing. The probes used the driver: go on
             * from the step's end with a fresh start, which keeps the result
             * a function of this call's inputs. */
            if ((st = restart(e)) != KR_OK)
                return st;
        }
        /* No event in this step: the signs move on; zero keeps the old one,
         * and so does a crossing no tick shows. */
        for (size_t i = 0; i < nth; i++)
            if (now[i] != 0 && !fires(e->sign[i], now[i], th[i].direction))
                e->sign[i] = now[i];
    }
    e->time = to;
    memcpy(e->y_last, e->y, bytes);
    e->time_last = to;
    e->nth_last = nth;
    e->have_last = true;
    return KR_OK;
}

kr_status_t kr__ode_engine_advance(kr__ode_engine_t *e, kr_time_t to,
                                   const kr_ode_threshold_t *th, size_t nth, int *hit)
{
    if (!e)
        return kr__fail(KR_ERR_INVALID_ARG, "ode: no engine");
    if (nth > 0 && (!th || !hit))
        return kr__fail(KR_ERR_INVALID_ARG, "ode: %zu thresholds but no %s", nth,
                        !th ? "threshold array" : "hit pointer");
    for (size_t i = 0; i < nth; i++) {
        if (!th[i].g)
            return kr__fail(KR_ERR_INVALID_ARG, "ode: threshold %zu has no function", i);
        if (th[i].direction < -1 || th[i].direction > 1)
            return kr__fail(KR_ERR_INVALID_ARG,
                            "ode: threshold %zu has direction %d; expected -1, 0 or +1", i,
                            th[i].direction);
    }
    if (to < e->time)
        return kr__fail(KR_ERR_INVALID_ARG,
                        "ode: cannot integrate backwards, from tick %llu to tick %llu",
                        (unsigned long long)e->time, (unsigned long long)to);
    if (hit)
        *hit = -1;
    if (nth > e->sign_cap) {
        if (nth > SIZE_MAX / 2)
            return kr__fail(KR_ERR_INVALID_ARG, "ode: %zu thresholds is too many", nth);
        signed char *s = realloc(e->sign, 2 * nth);
        if (!s)
            return kr__fail(KR_ERR_NOMEM, "ode: out of memory for %zu thresholds", nth);
        e->sign = s;
        e->sign_cap = nth;
    }
    if (to == e->time)
        return KR_OK;
    kr_time_t start = e->time;
    memcpy(e->y_call, e->y, e->dim * sizeof(double));
    e->fn_status = GSL_SUCCESS;
    kr_status_t st = run(e, to, th, nth, hit);
    if (st != KR_OK) {
        memcpy(e->y, e->y_call, e->dim * sizeof(double));
        e->time = start;
        if (hit)
            *hit = -1;
    }
    return st;
}
