/* Continuous integration engine: the ODE system of a continuous simulator.
 *
 * A continuous simulator holds a state y (dim doubles) that follows
 * dy/dt = f(t, y), integrated by GSL's adaptive steppers (gsl_odeiv2).
 * The user describes the system in a kr_ode_desc_t; the runtime integrates
 * it between the times at which the simulator must know its state (incoming
 * sync-events, observation points, the end of the run).
 *
 * Contract:
 * - t is in model units: a tick k is seen by the callbacks as
 *   k / precision, computed as a double.
 * - Callbacks follow GSL's conventions (gsl_odeiv2_system): rhs fills
 *   dydt[0..dim) and returns 0 (GSL_SUCCESS); the jacobian fills dfdy
 *   row-major, dfdy[i * dim + j] = df_i/dy_j, and dfdt[0..dim). Any other
 *   return value makes the integration fail with an error status and
 *   kr_last_error() naming the callback and the time; kairos never aborts
 *   on it. Returning GSL_EBADFUNC fails at once; other values first make
 *   GSL retry with smaller steps. Callbacks may be called at times that the
 *   state never reaches (rejected steps, bisection probes) and must not keep
 *   state of their own between calls: determinism rests on it.
 * - Accuracy: each step keeps the local error of every component below
 *   abs_tol + rel_tol * |y_i| (GSL's "y_new" control).
 * - Determinism: integrating from a tick to a tick gives a result that
 *   depends only on the start tick, the state there, the end tick and the
 *   thresholds — never on earlier integrations (GSL starts afresh each
 *   time, with the same initial step). Splitting an interval in two
 *   therefore changes the result slightly (within tolerance), but the same
 *   sequence of integrations always gives bit-identical states.
 * - State events: a threshold g(t, y) fires when its sign changes, filtered
 *   by direction. Signs are sampled at the end of each accepted GSL step; a
 *   change there is located by bisection on integer ticks, re-integrating
 *   from the start of that step, so the event time is the first tick at
 *   which the sign has changed (at most one tick after the true crossing).
 *   A threshold exactly zero does not fire: its sign is taken from its
 *   first nonzero value. Two crossings inside one step of which neither
 *   shows at its end (g dips below zero and back) go unseen, as do
 *   crossings that flip back within one tick. Crossings at the same tick
 *   fire the lowest index first.
 * - A threshold returning NaN, or a state turning non-finite, is an error.
 * - GSL error handler: GSL reports every failure by its return code, which
 *   kairos checks, but it first calls its error handler, and the default
 *   one aborts the process (allocation failures, a singular Newton matrix
 *   in the implicit methods). Creating an engine therefore turns that
 *   default handler off, process-wide, as GSL recommends for programs that
 *   check return codes; a handler the application installed itself is left
 *   in place. Create engines from the main thread (GSL's handler is one
 *   global pointer).
 */
#ifndef KAIROS_ODE_H
#define KAIROS_ODE_H

#include <stddef.h>
#include "kairos/export.h"

KR_BEGIN_DECLS

/* dy/dt at (t, y) into dydt; params is kr_ode_desc_t.params. Returns 0. */
typedef int (*kr_ode_rhs_fn)(double t, const double y[], double dydt[], void *params);
/* Jacobian df/dy (row-major, dim x dim) into dfdy and df/dt into dfdt; returns 0. */
typedef int (*kr_ode_jac_fn)(double t, const double y[], double *dfdy, double dfdt[],
                             void *params);
/* A state-event function; the event fires when its sign changes. */
typedef double (*kr_ode_threshold_fn)(double t, const double y[], void *params);

/* GSL steppers. The implicit ones (RK4IMP, MSBDF, RK1IMP, RK2IMP, BSIMP)
 * need a jacobian and suit stiff systems; the others are explicit. */
typedef enum kr_ode_method {
    KR_ODE_RK8PD = 0,   /* Runge-Kutta Prince-Dormand (8, 9): the default */
    KR_ODE_RKF45,       /* Runge-Kutta-Fehlberg (4, 5) */
    KR_ODE_RKCK,        /* Runge-Kutta Cash-Karp (4, 5) */
    KR_ODE_RK4IMP,      /* implicit Gaussian 4th order Runge-Kutta; jacobian */
    KR_ODE_MSBDF,       /* variable-order BDF multistep (1 to 5); jacobian */
    KR_ODE_RK2,         /* explicit embedded Runge-Kutta (2, 3) */
    KR_ODE_RK4,         /* explicit 4th order Runge-Kutta, step doubling */
    KR_ODE_RK1IMP,      /* implicit Euler; jacobian */
    KR_ODE_RK2IMP,      /* implicit Gaussian 2nd order Runge-Kutta; jacobian */
    KR_ODE_BSIMP,       /* implicit Bulirsch-Stoer (Bader-Deuflhard); jacobian */
    KR_ODE_MSADAMS      /* variable-order Adams multistep (1 to 12) */
} kr_ode_method_t;

/* An ODE system. Zero fields take defaults; the engine copies what it
 * needs (initial is read once, at creation; params is kept as given). */
typedef struct kr_ode_desc {
    size_t dim;                 /* number of state variables, > 0 */
    kr_ode_rhs_fn rhs;          /* required */
    kr_ode_jac_fn jacobian;     /* required by the implicit methods */
    void *params;               /* passed to rhs, jacobian and thresholds */
    const double *initial;      /* dim finite values, required */
    kr_ode_method_t method;     /* 0 = KR_ODE_RK8PD */
    double abs_tol, rel_tol;    /* >= 0, finite; 0 = 1e-10 */
    double initial_step;        /* model units, >= 0, finite; 0 = 1e-6 */
} kr_ode_desc_t;

/* A state event: g's sign change, filtered by direction. */
typedef struct kr_ode_threshold {
    kr_ode_threshold_fn g;      /* required; gets kr_ode_desc_t.params */
    int direction;              /* +1 rising only, -1 falling only, 0 both */
} kr_ode_threshold_t;

KR_END_DECLS

#endif
