/* Signals and injected allocation failures: see fault.h. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/fault.h"

volatile sig_atomic_t kr__signal_caught;
volatile sig_atomic_t kr__fault_fired;
volatile sig_atomic_t kr__checkpoint_asked;
static volatile sig_atomic_t term_checkpoints;
uint64_t kr__fault_at;
static uint64_t fault_count;

static void on_signal(int sig)
{
    if (sig == SIGINT && (kr__signal_caught == SIGINT || kr__signal_caught == SIGTERM)) {
        /* Ctrl-C after an interrupt (a Ctrl-C or a SIGTERM) not yet
         * acted on, as in a read that waits: stop now, as the signal
         * itself would. (Not for SIGTERM, which launchers may send more
         * than once: the agreed outcome and the clean-up must not be cut
         * short.) */
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    if (sig == SIGUSR1 || (sig == SIGTERM && term_checkpoints)) {
        if (!kr__checkpoint_asked) kr__checkpoint_asked = sig;
        return;
    }
    if (!kr__signal_caught) kr__signal_caught = sig;
}

void kr__checkpoint_on_term(void)
{
    term_checkpoints = 1;
}

void kr__catch_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGUSR1, &sa, NULL);
}

/* The N of KAIROS_FAIL_ALLOC, 0 without the variable. */
static kr_status_t fail_alloc_setting(uint64_t *n)
{
    *n = 0;
    const char *v = getenv("KAIROS_FAIL_ALLOC");
    if (!v || !v[0]) return KR_OK;
    char *end;
    errno = 0;
    unsigned long long value = strtoull(v, &end, 10);
    if (*end || errno || value == 0 || v[0] == '-')
        return kr__fail(KR_ERR_INVALID_ARG, "KAIROS_FAIL_ALLOC: expected a whole number >= 1, found \"%s\"", v);
    *n = value;
    return KR_OK;
}

kr_status_t kr__fault_check(void)
{
    uint64_t n;
    return fail_alloc_setting(&n);
}

kr_status_t kr__fault_arm(void)
{
    fault_count = 0;
    kr__fault_fired = 0;
    return fail_alloc_setting(&kr__fault_at);
}

void kr__fault_disarm(void) { kr__fault_at = 0; }

bool kr__fault_count(void)
{
    if (++fault_count != kr__fault_at) return false;
    kr__fault_fired = 1;
    return true;
}
