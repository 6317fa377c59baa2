/*
 * test_nvml_hang.c - NVML calls that do not return (a GPU that fell off
 * the bus), with the fake NVML's hang rules (docs/test-doubles.md): every
 * call of the backend is bounded (2 s), at discovery, at start, while
 * sampling and at stop; the device whose call hangs is reported as failed,
 * naming the call, the others are sampled; a later context does not ask
 * it again while the call is stuck; a hung nvmlInit fails the open.
 *
 * Each case runs in its own process: a stuck call keeps its thread (and
 * the fake's NVML initialised) until the process ends.  The hangs last
 * 30 s, far beyond the bounds checked (a few seconds, generous for a
 * loaded machine): the checks tell "returned" from "hung", not timings.
 */
#include "check.h"
#include "sampler/backends/backend.h"
#include "sampler/backends/runner.h"
#include "sampler/hook.h"
#include "util/clock.h"
#include "util/error.h"
#include "gpu_profile.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *fake_new;
static char scenario_path[512];

/* A call that should return at its 2 s bound, not after the 30 s hang. */
#define BOUND_S 8.0

#define CHECK_PREFIX_(s, prefix)                                                                   \
    do {                                                                                           \
        const char *s_ = (s), *p_ = (prefix);                                                      \
        CHECK(s_ &&strncmp(s_, p_, strlen(p_)) == 0);                                              \
        if (s_ && strncmp(s_, p_, strlen(p_)) != 0)                                                \
            fprintf(stderr, "  got:  \"%s\"\n  want: \"%s...\"\n", s_, p_);                        \
    } while (0)

static void use_scenario(const char *text)
{
    FILE *f = fopen(scenario_path, "w");
    if (!f || fputs(text, f) < 0) {
        perror(scenario_path);
        exit(2);
    }
    fclose(f);
    setenv("FAKE_NVML_SCENARIO", scenario_path, 1);
}

static double since_s(uint64_t t0)
{
    return (double)(gp_now_mono_ns() - t0) / 1e9;
}

static void nap_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static gp_options nvml_options(int device)
{
    gp_options o;
    gp_options_init(&o);
    o.backend = GP_BACKEND_NVML;
    o.device = device;
    o.interval_s = 0.02;
    o.nvml_library = fake_new;
    o.report = GP_REPORT_NONE;
    return o;
}

/* Waits (bounded) until the monitor has done `ticks` rounds. */
static void wait_ticks(gp_monitor *m, uint64_t ticks)
{
    gp_monitor_stats st;
    for (int i = 0; i < 3000 && gp_monitor_get_stats(m, &st) == GP_OK && st.ticks < ticks; i++)
        nap_ms(5);
}

/* Device 1's utilization call hangs from its third call on: device 1 is
 * failed at that round, within the bound, and device 0 goes on; stop and
 * destroy do not wait for the hung call. */
static void case_read_hangs(void)
{
    use_scenario("device 0\ndevice 1\nhang 1 util 30000 after 2\n");
    gp_options o = nvml_options(GP_ALL_DEVICES);
    gp_monitor *m = NULL;
    gp_error err;
    CHECK_INT(gp_monitor_create(&o, &m, &err), GP_OK);
    if (!m)
        return;
    CHECK_INT(gp_monitor_start(m, &err), GP_OK);
    /* Rounds 1 and 2 read device 1; round 3 hangs for 2 s, then more. */
    wait_ticks(m, 6);
    uint64_t t0 = gp_now_mono_ns();
    CHECK_INT(gp_monitor_stop(m, &err), GP_OK);
    double stop_s = since_s(t0);
    printf("stop with a device hung: %.3f s\n", stop_s);
    CHECK(stop_s < BOUND_S);
    const gp_summary *s0 = gp_monitor_summary(m, 0), *s1 = gp_monitor_summary(m, 1);
    CHECK(s0 && s1);
    if (s0 && s1) {
        CHECK_INT(s0->device_status, GP_OK);
        CHECK(s0->sample_count >= 4);
        CHECK_INT(s1->device_status, GP_ERR_TIMEOUT);
        CHECK_STR(s1->device_error,
                  "nvml: device 1 (Fake NVIDIA GPU): nvmlDeviceGetUtilizationRates did not answer "
                  "within 2 s: the device is not asked again until that call returns");
        CHECK_U64(s1->sample_count, 2);
        CHECK(s1->device_error_at_s > 0.0);
    }
    t0 = gp_now_mono_ns();
    gp_monitor_destroy(m);
    CHECK(since_s(t0) < BOUND_S);

    /* A new monitor on the same library does not ask device 1 while its
     * call is stuck: it is failed at once, device 0 is sampled. */
    t0 = gp_now_mono_ns();
    CHECK_INT(gp_monitor_create(&o, &m, &err), GP_OK);
    CHECK(since_s(t0) < 1.5);
    if (!m)
        return;
    CHECK_INT(gp_monitor_start(m, &err), GP_OK);
    wait_ticks(m, 2);
    CHECK_INT(gp_monitor_stop(m, &err), GP_OK);
    s1 = gp_monitor_summary(m, 1);
    CHECK(s1 != NULL);
    if (s1) {
        CHECK_INT(s1->device_status, GP_ERR_TIMEOUT);
        CHECK_PREFIX_(s1->device_error, "nvml: device 1: nvmlDeviceGetUtilizationRates has not "
                                        "answered for ");
        CHECK_CONTAINS(s1->device_error, " s: the device is not asked again until it does");
        CHECK_U64(s1->sample_count, 0);
    }
    CHECK_INT(gp_monitor_summary(m, 0)->device_status, GP_OK);
    gp_monitor_destroy(m);
}

/* The only device hangs while the sampler is inside its read: stop()
 * returns at the call's bound, the device failed. */
static void case_stop_during_hang(void)
{
    use_scenario("device 0\nhang 0 power 30000 after 1\n");
    gp_options o = nvml_options(0);
    o.interval_s = 0.005;
    gp_monitor *m = NULL;
    gp_error err;
    CHECK_INT(gp_monitor_create(&o, &m, &err), GP_OK);
    if (!m)
        return;
    CHECK_INT(gp_monitor_start(m, &err), GP_OK);
    wait_ticks(m, 1);
    nap_ms(100); /* the second round is inside the hung call now */
    uint64_t t0 = gp_now_mono_ns();
    CHECK_INT(gp_monitor_stop(m, &err), GP_OK);
    double stop_s = since_s(t0);
    printf("stop during a hung call: %.3f s\n", stop_s);
    CHECK(stop_s < BOUND_S);
    const gp_summary *s = gp_monitor_summary(m, 0);
    CHECK(s != NULL);
    if (s) {
        CHECK_INT(s->device_status, GP_ERR_TIMEOUT);
        /* Power is read through the field values call (nvml_fields.c). */
        CHECK_STR(s->device_error, "nvml: device 0 (Fake NVIDIA GPU): nvmlDeviceGetFieldValues "
                                   "(power) did not answer within 2 s: the device is not asked "
                                   "again until that call returns");
        CHECK_U64(s->sample_count, 1);
    }
    t0 = gp_now_mono_ns();
    gp_monitor_destroy(m);
    CHECK(since_s(t0) < BOUND_S);
}

/* A round posted ahead (issue 39): the sampling thread never sleeps
 * until a tick on its own (the round runner waits for it), and sleeps at
 * most once a round, until the round is read; every round is stamped, in
 * order.  The first and last rounds read the energy counter on both
 * devices (in parallel, a batch: no sleep counted). */
static void case_paced_one_sleep(void)
{
    use_scenario("device 0\ndevice 1\n");
    gp_options o = nvml_options(GP_ALL_DEVICES);
    o.keep_samples = 1;
    gp_monitor *m = NULL;
    gp_error err;
    CHECK_INT(gp_monitor_create(&o, &m, &err), GP_OK);
    if (!m)
        return;
    uint64_t ticks0 = gp_monitor_tick_sleeps();
    CHECK_INT(gp_monitor_start(m, &err), GP_OK);
    /* Rounds 3 to 10 or so: the sampling thread's sleeps (create, start
     * and stop wait for their calls too), one round in flight at most. */
    gp_monitor_stats st;
    wait_ticks(m, 2);
    CHECK_INT(gp_monitor_get_stats(m, &st), GP_OK);
    uint64_t ticks_a = st.ticks, owner_a = gp_runner_owner_sleeps();
    wait_ticks(m, 10);
    uint64_t owner = gp_runner_owner_sleeps() - owner_a;
    CHECK_INT(gp_monitor_get_stats(m, &st), GP_OK);
    uint64_t rounds = st.ticks - ticks_a;
    CHECK_INT(gp_monitor_stop(m, &err), GP_OK);
    CHECK_INT(gp_monitor_get_stats(m, &st), GP_OK);
    uint64_t tick_sleeps = gp_monitor_tick_sleeps() - ticks0;
    printf("paced: %llu rounds, %llu tick sleeps; %llu sleeps for %llu rounds read\n",
           (unsigned long long)st.ticks, (unsigned long long)tick_sleeps, (unsigned long long)owner,
           (unsigned long long)rounds);
    CHECK(st.ticks >= 10);
    CHECK_U64(tick_sleeps, 0);
    CHECK(owner <= rounds + 1);
    CHECK_U64(st.device_samples, 2 * st.ticks);
    size_t n = 0;
    const gp_sample *s = gp_monitor_samples(m, &n);
    CHECK_U64(n, 2 * st.ticks);
    for (size_t i = 0; s && i < n; i++) {
        CHECK(s[i].t_mono_ns > 0 && s[i].t_wall_ns > 0);
        if (i >= 2) /* slots 0 and 1 of a round share its time */
            CHECK(s[i].t_mono_ns > s[i - 2].t_mono_ns);
        if (i % 2)
            CHECK_U64(s[i].t_mono_ns, s[i - 1].t_mono_ns);
    }
    gp_monitor_destroy(m);
}

/* stop() while the next round is posted for a tick a minute away: the
 * round is cancelled, never read (no post after it but the last round's,
 * nothing recorded), the last round is read at stop, and stop returns at
 * once rather than at the tick (BOUND_S tells "returned" from "waited for
 * the tick").  The hook's gate, asked on the sampling thread just before
 * the round is posted, notes the sleeps so far: one more is the sampling
 * thread waiting for the posted round. */
static atomic_uint_fast64_t gate_sleeps, gate_calls, hook_rounds;

static bool count_gate(void *user)
{
    (void)user;
    atomic_store(&gate_sleeps, gp_runner_owner_sleeps());
    atomic_fetch_add(&gate_calls, 1);
    return true;
}

static void count_round(void *user, uint64_t t_mono, uint64_t t_wall, const gp_device_sample *s,
                        const gp_status *st, const gp_error *errs, size_t n)
{
    (void)user, (void)t_mono, (void)t_wall, (void)s, (void)st, (void)errs, (void)n;
    atomic_fetch_add(&hook_rounds, 1);
}

static void case_paced_stop_cancels(void)
{
    use_scenario("device 0\n");
    gp_options o = nvml_options(0);
    o.interval_s = 60.0;
    o.keep_samples = 1;
    gp_monitor *m = NULL;
    gp_error err;
    CHECK_INT(gp_monitor_create(&o, &m, &err), GP_OK);
    if (!m)
        return;
    gp_round_hook hook = {.gate = count_gate, .on_round = count_round};
    CHECK_INT(gp_monitor_set_hook(m, &hook, &err), GP_OK);
    CHECK_INT(gp_monitor_start(m, &err), GP_OK);
    for (int i = 0; i < 6000 && !(atomic_load(&gate_calls) == 1 &&
                                  gp_runner_owner_sleeps() > atomic_load(&gate_sleeps));
         i++)
        nap_ms(5);
    CHECK_U64(atomic_load(&gate_calls), 1);
    CHECK(gp_runner_owner_sleeps() > atomic_load(&gate_sleeps));
    uint64_t posts1 = gp_runner_posts();
    uint64_t t0 = gp_now_mono_ns();
    CHECK_INT(gp_monitor_stop(m, &err), GP_OK);
    double stop_s = since_s(t0);
    printf("stop with a round posted ahead: %.3f s\n", stop_s);
    CHECK(stop_s < BOUND_S);
    CHECK_U64(gp_runner_posts() - posts1, 1); /* the last round's */
    gp_monitor_stats st;
    CHECK_INT(gp_monitor_get_stats(m, &st), GP_OK);
    CHECK_U64(st.ticks, 2);
    CHECK_U64(st.device_samples, 2);
    CHECK_U64(st.missed_ticks, 0);
    CHECK_U64(atomic_load(&hook_rounds), 2);
    CHECK_U64(atomic_load(&gate_calls), 2); /* the cancelled round's and the last's */
    size_t n = 0;
    const gp_sample *s = gp_monitor_samples(m, &n);
    CHECK_U64(n, 2);
    if (s && n == 2) /* the last round read at stop, not at the tick */
        CHECK(s[1].t_mono_ns - s[0].t_mono_ns < 30000000000ull);
    const gp_summary *sum = gp_monitor_summary(m, 0);
    CHECK(sum && sum->device_status == GP_OK && sum->sample_count == 2);
    gp_monitor_destroy(m);
}

/* Discovery: device 0's name hangs.  create() returns at the bound with
 * device 0 failed from the start (device 1 sampled); start and stop do not
 * ask it again. */
static void case_discovery_hangs(void)
{
    use_scenario("device 0\ndevice 1\nhang 0 name 30000\n");
    gp_options o = nvml_options(GP_ALL_DEVICES);
    gp_monitor *m = NULL;
    gp_error err;
    uint64_t t0 = gp_now_mono_ns();
    CHECK_INT(gp_monitor_create(&o, &m, &err), GP_OK);
    double create_s = since_s(t0);
    printf("create with a hung discovery call: %.3f s\n", create_s);
    CHECK(create_s < BOUND_S);
    if (!m)
        return;
    t0 = gp_now_mono_ns();
    CHECK_INT(gp_monitor_start(m, &err), GP_OK);
    CHECK(since_s(t0) < 1.5); /* device 0 is not asked again */
    wait_ticks(m, 3);
    t0 = gp_now_mono_ns();
    CHECK_INT(gp_monitor_stop(m, &err), GP_OK);
    CHECK(since_s(t0) < 1.5);
    const gp_summary *s0 = gp_monitor_summary(m, 0), *s1 = gp_monitor_summary(m, 1);
    CHECK(s0 && s1);
    if (s0 && s1) {
        CHECK_INT(s0->device_status, GP_ERR_TIMEOUT);
        CHECK_STR(s0->device_error, "nvml: device 0: nvmlDeviceGetName did not answer within "
                                    "2 s: the device is not asked again until that call returns");
        CHECK_NEAR(s0->device_error_at_s, 0.0, 0);
        CHECK_U64(s0->sample_count, 0);
        CHECK_STR(s0->name, "");
        CHECK_INT(s1->device_status, GP_OK);
        CHECK_STR(s1->name, "Fake NVIDIA GPU");
        CHECK(s1->sample_count >= 3);
    }
    gp_monitor_destroy(m);

    /* gp_list_devices (a new context) is not held up by it either. */
    gp_device_info *devs = NULL;
    size_t n = 0;
    t0 = gp_now_mono_ns();
    CHECK_INT(gp_list_devices(&o, &devs, &n, NULL, 0, NULL, &err), GP_ERR_TIMEOUT);
    CHECK(since_s(t0) < 1.5);
    CHECK_PREFIX_(err.message, "nvml: device 0: nvmlDeviceGetName has not answered for ");
    gp_devices_free(devs);
}

/* nvmlInit hangs: the open fails at the bound, and a second open at once. */
static void case_init_hangs(void)
{
    use_scenario("device 0\nhang init 30000\n");
    gp_options o = nvml_options(0);
    gp_monitor *m = NULL;
    gp_error err;
    uint64_t t0 = gp_now_mono_ns();
    CHECK_INT(gp_monitor_create(&o, &m, &err), GP_ERR_TIMEOUT);
    CHECK(since_s(t0) < BOUND_S);
    CHECK(m == NULL);
    CHECK_STR(err.message, "nvml: nvmlInit_v2 did not answer within 2 s: NVML is not asked again "
                           "until that call returns");
    t0 = gp_now_mono_ns();
    CHECK_INT(gp_monitor_create(&o, &m, &err), GP_ERR_TIMEOUT);
    CHECK(since_s(t0) < 1.5);
    CHECK_PREFIX_(err.message, "nvml: nvmlInit_v2 has not answered for ");
    /* Not strict: the note says why nothing is sampled. */
    o.strict = 0;
    CHECK_INT(gp_monitor_create(&o, &m, &err), GP_OK);
    CHECK_STR(gp_monitor_backend(m), "none");
    CHECK_CONTAINS(gp_monitor_note(m), "nvmlInit_v2 has not answered for ");
    gp_monitor_destroy(m);
}

/* A smaller backend_timeout_s bounds the calls too; a call that answers
 * late (before the test ends) frees its device again. */
static void case_recovers(void)
{
    use_scenario("device 0\nhang 0 util 1500 after 1 times 1\n");
    gp_options o = nvml_options(0);
    o.backend_timeout_s = 0.3;
    gp_monitor *m = NULL;
    gp_error err;
    CHECK_INT(gp_monitor_create(&o, &m, &err), GP_OK);
    if (!m)
        return;
    CHECK_INT(gp_monitor_start(m, &err), GP_OK);
    wait_ticks(m, 3);
    CHECK_INT(gp_monitor_stop(m, &err), GP_OK);
    const gp_summary *s = gp_monitor_summary(m, 0);
    CHECK(s != NULL);
    if (s) {
        CHECK_INT(s->device_status, GP_ERR_TIMEOUT);
        CHECK_CONTAINS(s->device_error, "did not answer within 0.3 s");
    }
    /* The hung call returns after 1.5 s: the next region reads the device. */
    nap_ms(2000);
    CHECK_INT(gp_monitor_rearm(m, &err), GP_OK);
    CHECK_INT(gp_monitor_start(m, &err), GP_OK);
    wait_ticks(m, 3);
    CHECK_INT(gp_monitor_stop(m, &err), GP_OK);
    s = gp_monitor_summary(m, 0);
    CHECK(s != NULL);
    if (s) {
        CHECK_INT(s->device_status, GP_OK);
        CHECK(s->sample_count >= 3);
    }
    gp_monitor_destroy(m);
}

/* gp_runner_post / gp_runner_wait: jobs posted on two runners run at the
 * same time: job A waits (up to 30 s) for job B to begin, which it can only
 * do because B was handed over before anyone waited for A.  Then a job that
 * outlives its deadline is abandoned and named, and the runner refuses
 * the next post while it runs. */
static atomic_int b_started, a_saw_b, release_c;

static void job_a(gp_runner *r, void *job)
{
    (void)r;
    (void)job;
    for (int i = 0; i < 6000 && !atomic_load(&b_started); i++)
        nap_ms(5);
    atomic_store(&a_saw_b, atomic_load(&b_started));
}

static void job_b(gp_runner *r, void *job)
{
    (void)r;
    (void)job;
    atomic_store(&b_started, 1);
}

static void job_c(gp_runner *r, void *job)
{
    (void)job;
    gp_runner_doing(r, "job_c_blocks");
    for (int i = 0; i < 6000 && !atomic_load(&release_c); i++)
        nap_ms(5);
}

static void case_runner_post_wait(void)
{
    gp_runner *a = gp_runner_create(8, NULL), *b = gp_runner_create(8, NULL);
    CHECK(a && b);
    if (!a || !b)
        return;
    gp_runner_stuck why;
    uint64_t deadline = gp_now_mono_ns() + 60000000000ull;
    CHECK_INT(gp_runner_wait(a, deadline, &why), GP_ERR_STATE); /* nothing posted */
    CHECK_INT(gp_runner_post(a, job_a, "a", &why), GP_OK);
    CHECK_INT(gp_runner_post(b, job_b, "b", &why), GP_OK);
    CHECK_INT(gp_runner_wait(a, deadline, &why), GP_OK);
    CHECK_INT(gp_runner_wait(b, deadline, &why), GP_OK);
    CHECK_INT(atomic_load(&a_saw_b), 1);
    CHECK_INT(gp_runner_wait(b, deadline, &why), GP_ERR_STATE); /* waited already */

    /* A batch: both jobs posted, one sleep for the two, then each waited. */
    gp_runner_batch *batch = gp_runner_batch_create();
    CHECK(batch != NULL);
    if (!batch)
        return;
    atomic_store(&b_started, 0);
    atomic_store(&a_saw_b, 0);
    CHECK_INT(gp_runner_post_batch(a, job_a, "a", batch, &why), GP_OK);
    CHECK_INT(gp_runner_post_batch(b, job_b, "b", batch, &why), GP_OK);
    gp_runner_batch_wait(batch, deadline);
    CHECK(!gp_runner_stuck_now(a, NULL) && !gp_runner_stuck_now(b, NULL)); /* both returned */
    CHECK_INT(gp_runner_wait(a, deadline, &why), GP_OK);
    CHECK_INT(gp_runner_wait(b, deadline, &why), GP_OK);
    CHECK_INT(atomic_load(&a_saw_b), 1);

    /* A deadline already past: abandoned, named, out of its batch (the
     * batch's wait returns while the job still runs); still running: the
     * runner refuses the next post. */
    CHECK_INT(gp_runner_post_batch(a, job_c, "c", batch, &why), GP_OK);
    while (!gp_runner_stuck_now(a, &why) || strcmp(why.what, "job_c_blocks") != 0)
        nap_ms(1); /* until job_c names its call (bounded by job_c's own end) */
    CHECK_INT(gp_runner_wait(a, gp_now_mono_ns(), &why), GP_ERR_TIMEOUT);
    CHECK_STR(why.what, "job_c_blocks");
    CHECK(!why.before);
    gp_runner_batch_wait(batch, deadline);
    CHECK(gp_runner_stuck_now(a, NULL));
    CHECK_INT(gp_runner_post(a, job_b, "b", &why), GP_ERR_TIMEOUT);
    CHECK(why.before);
    gp_runner_batch_free(batch);
    atomic_store(&release_c, 1);
    gp_runner_release(a); /* frees at once, or when job_c returns */
    gp_runner_release(b);
}

/* gp_runner_post_at / gp_runner_cancel: a job posted for a minute ahead
 * is withdrawn before it begins (the wait says GP_ERR_STATE, the job never
 * runs, a second cancel finds nothing); one posted for now runs; a job
 * begun is not cancelled. */
static atomic_int paced_runs;

static void job_paced(gp_runner *r, void *job)
{
    (void)r;
    (void)job;
    atomic_fetch_add(&paced_runs, 1);
}

static void case_runner_paced(void)
{
    gp_runner *a = gp_runner_create(8, NULL);
    CHECK(a != NULL);
    if (!a)
        return;
    gp_runner_stuck why;
    uint64_t now = gp_now_mono_ns(), minute = 60000000000ull;
    CHECK(!gp_runner_cancel(a)); /* nothing posted */
    CHECK_INT(gp_runner_post_at(a, job_paced, "paced", now + minute, now + 2 * minute, &why),
              GP_OK);
    CHECK(gp_runner_stuck_now(a, NULL)); /* posted, not begun */
    CHECK_INT(gp_runner_post(a, job_b, "b", &why), GP_ERR_TIMEOUT);
    CHECK(gp_runner_cancel(a));
    CHECK(!gp_runner_cancel(a));
    CHECK_INT(gp_runner_wait_steps(a, minute, &why), GP_ERR_STATE);
    CHECK(!gp_runner_stuck_now(a, NULL));
    CHECK_INT(atomic_load(&paced_runs), 0);
    /* Posted for now: runs; the runner then naps until "next" but a job
     * posted for earlier still runs at its own start. */
    now = gp_now_mono_ns();
    CHECK_INT(gp_runner_post_at(a, job_paced, "paced", now, now + minute, &why), GP_OK);
    CHECK_INT(gp_runner_wait_steps(a, minute, &why), GP_OK);
    CHECK_INT(atomic_load(&paced_runs), 1);
    now = gp_now_mono_ns();
    CHECK_INT(gp_runner_post_at(a, job_paced, "paced", now, 0, &why), GP_OK);
    CHECK_INT(gp_runner_wait_steps(a, minute, &why), GP_OK);
    CHECK_INT(atomic_load(&paced_runs), 2);
    CHECK(!gp_runner_cancel(a)); /* done: nothing to cancel */
    /* A plain post after paced ones runs at once. */
    CHECK_INT(gp_runner_call(a, job_paced, "plain", gp_now_mono_ns() + minute, &why), GP_OK);
    CHECK_INT(atomic_load(&paced_runs), 3);
    /* Released with a job posted ahead, not begun: never run. */
    now = gp_now_mono_ns();
    CHECK_INT(gp_runner_post_at(a, job_paced, "paced", now + minute, 0, &why), GP_OK);
    CHECK(gp_runner_cancel(a));
    CHECK_INT(gp_runner_wait_steps(a, minute, &why), GP_ERR_STATE);
    gp_runner_release(a);
    CHECK_INT(atomic_load(&paced_runs), 3);
}

/* A round read all at once (read_round, the sampler's way): the device
 * whose call hangs fails at its bound, naming the call; the other two are
 * read in the same round and in the next one, where the hung device is not
 * asked again. */
static void case_round_hangs(void)
{
    use_scenario("device 0\ndevice 1\ndevice 2\nhang 1 util 30000 after 1\n");
    gp_backend_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.nvml_library = fake_new;
    cfg.timeout_ns = 2000000000ull;
    void *ctx = NULL;
    gp_error err[3];
    CHECK_INT(gp_backend_nvml.open(&cfg, &ctx, &err[0]), GP_OK);
    if (!ctx)
        return;
    unsigned idx[3] = {0, 1, 2};
    CHECK_INT(gp_backend_nvml.start(ctx, idx, 3, 10000000, &err[0]), GP_OK);
    unsigned flags[3] = {0, 0, 0};
    gp_device_sample s[3];
    gp_status st[3];
    for (int round = 1; round <= 3; round++) {
        uint64_t t0 = gp_now_mono_ns();
        gp_backend_nvml.read_round(ctx, 3, flags, s, st, err);
        CHECK(since_s(t0) < BOUND_S);
        CHECK_INT(st[0], GP_OK);
        CHECK_INT(st[2], GP_OK);
        CHECK_INT(st[1], round == 1 ? GP_OK : GP_ERR_TIMEOUT);
        if (round == 2)
            CHECK_STR(err[1].message,
                      "nvml: device 1 (Fake NVIDIA GPU): nvmlDeviceGetUtilizationRates did not "
                      "answer within 2 s: the device is not asked again until that call returns");
        if (round == 3)
            CHECK_PREFIX_(err[1].message, "nvml: device 1 (Fake NVIDIA GPU): "
                                          "nvmlDeviceGetUtilizationRates has not answered for ");
    }
    gp_backend_nvml.stop(ctx);
    gp_backend_nvml.close(ctx);
}

/* A backend context on the scenario's n devices, all started; NULL (and a
 * failed check) on error. */
static void *round_open(size_t n, uint64_t timeout_ns)
{
    gp_backend_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.nvml_library = fake_new;
    cfg.timeout_ns = timeout_ns;
    void *ctx = NULL;
    gp_error err;
    CHECK_INT(gp_backend_nvml.open(&cfg, &ctx, &err), GP_OK);
    if (!ctx)
        return NULL;
    unsigned idx[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    CHECK_INT(gp_backend_nvml.start(ctx, idx, n, 10000000, &err), GP_OK);
    return ctx;
}

#define HUNG_2S                                                                                    \
    "nvmlDeviceGetUtilizationRates did not answer within 2 s: the device is not asked again "      \
    "until that call returns"

/* Three rounds of n devices (at most 8), the devices in `hung` (a bit
 * each) hanging from their second read on: every other device is read in
 * every round; a hung one fails in round 2 with exactly today's message and
 * in round 3 at once; the reads of a round cost one post to a runner, plus
 * one per device given up with devices after it (the rest of the round
 * handed to a fresh runner).  With the energy counter (fl) every device
 * asked is one post: its own runner, in parallel. */
static void round_hang_check(size_t n, unsigned hung, unsigned fl)
{
    char text[512] = "";
    for (size_t i = 0; i < n; i++)
        snprintf(text + strlen(text), sizeof text - strlen(text), "device %zu\n", i);
    for (size_t i = 0; i < n; i++)
        if (hung & (1u << i))
            snprintf(text + strlen(text), sizeof text - strlen(text),
                     "hang %zu util 30000 after 1\n", i);
    use_scenario(text);
    void *ctx = round_open(n, 2000000000ull);
    if (!ctx)
        return;
    unsigned flags[8] = {fl, fl, fl, fl, fl, fl, fl, fl};
    gp_device_sample s[8];
    gp_status st[8];
    gp_error err[8];
    for (int round = 1; round <= 3; round++) {
        uint64_t posts0 = gp_runner_posts();
        gp_backend_nvml.read_round(ctx, n, flags, s, st, err);
        uint64_t posts = gp_runner_posts() - posts0;
        uint64_t want_posts = fl ? 0 : 1;
        for (size_t i = 0; i < n; i++) {
            bool is_hung = hung & (1u << i);
            if (!fl && round == 2 && is_hung && i + 1 < n)
                want_posts++;
            if (fl && !(round == 3 && is_hung))
                want_posts++;
            if (!is_hung || round == 1) {
                CHECK_INT(st[i], GP_OK);
                CHECK(s[i].valid & GP_M_UTIL_GPU);
                continue;
            }
            char want[256];
            snprintf(want, sizeof want, "nvml: device %zu (Fake NVIDIA GPU): ", i);
            CHECK_INT(st[i], GP_ERR_TIMEOUT);
            if (round == 2) {
                snprintf(want + strlen(want), sizeof want - strlen(want), "%s", HUNG_2S);
                CHECK_STR(err[i].message, want);
            } else {
                snprintf(want + strlen(want), sizeof want - strlen(want),
                         "nvmlDeviceGetUtilizationRates has not answered for ");
                CHECK_PREFIX_(err[i].message, want);
            }
        }
        CHECK_U64(posts, want_posts);
    }
    gp_backend_nvml.stop(ctx);
    gp_backend_nvml.close(ctx);
}

/* The first device of the round hangs: the others are read by a fresh
 * runner in the same round. */
static void case_round_hang_first(void)
{
    round_hang_check(3, 1u << 0, 0);
}

/* The last device hangs: nothing is left to hand over. */
static void case_round_hang_last(void)
{
    round_hang_check(3, 1u << 2, 0);
}

/* Two devices hang in the same round: each is given up at its own bound,
 * the devices between and after them are read. */
static void case_round_two_hang(void)
{
    round_hang_check(4, (1u << 0) | (1u << 2), 0);
}

/* Eight devices, none hung: one post a round (one runner reads them all),
 * not one per device. */
static void case_round_one_post(void)
{
    round_hang_check(8, 0, 0);
}

/* Rounds that read the energy counter (~3.7 ms of the driver's CPU a
 * device) go out on the devices' own runners in parallel: one post a
 * device, the hung one given up with the same message. */
static void case_round_energy(void)
{
    round_hang_check(3, 1u << 1, GP_READ_ENERGY);
}

/* The hung read of device 0 answers late (after 5 s, bound 2 s) while
 * later rounds go on: the runner given up returns without reading another
 * device - device 1's memory sequence advances by exactly one a round, so a
 * read of it by the late runner would show as a value skipped - and device
 * 0 is read again in a later round once its call returned. */
static void case_round_late_answer(void)
{
    enum { SEQ = 500 };
    static char text[8192];
    snprintf(text, sizeof text,
             "device 0\ndevice 1\ndevice 2\nhang 0 util 5000 after 1 times 1\nseq 1 mem_used");
    for (int v = 1; v <= SEQ; v++)
        snprintf(text + strlen(text), sizeof text - strlen(text), " %d", v);
    snprintf(text + strlen(text), sizeof text - strlen(text), "\n");
    use_scenario(text);
    void *ctx = round_open(3, 2000000000ull);
    if (!ctx)
        return;
    unsigned flags[3] = {0, 0, 0};
    gp_device_sample s[3];
    gp_status st[3];
    gp_error err[3];
    int timeouts = 0, back = 0;
    uint64_t want_mem = 1;
    for (int round = 1; round < SEQ - 10 && !back; round++) {
        gp_backend_nvml.read_round(ctx, 3, flags, s, st, err);
        CHECK_INT(st[1], GP_OK);
        CHECK_INT(st[2], GP_OK);
        CHECK_U64(s[1].mem_used_bytes, want_mem);
        want_mem++;
        if (st[0] == GP_ERR_TIMEOUT)
            timeouts++;
        else if (round > 1)
            back = round;
        if (round == 1)
            CHECK_INT(st[0], GP_OK);
        if (round == 2) {
            CHECK_INT(st[0], GP_ERR_TIMEOUT);
            CHECK_STR(err[0].message, "nvml: device 0 (Fake NVIDIA GPU): " HUNG_2S);
        }
        nap_ms(50);
    }
    CHECK(back > 2);
    CHECK_INT(st[0], GP_OK);
    CHECK(timeouts >= 1);
    printf("late answer: device 0 back in round %d after %d rounds failed\n", back, timeouts);
    /* A few more rounds: still one value a round for device 1. */
    for (int round = 0; round < 3; round++) {
        gp_backend_nvml.read_round(ctx, 3, flags, s, st, err);
        for (int i = 0; i < 3; i++)
            CHECK_INT(st[i], GP_OK);
        CHECK_U64(s[1].mem_used_bytes, want_mem);
        want_mem++;
    }
    gp_backend_nvml.stop(ctx);
    gp_backend_nvml.close(ctx);
}

/* The context closes while a round's read is still stuck: the stuck runner
 * keeps the device's job area, which the call writes when it returns (ASan
 * would see a write into freed memory).  A second context waits (bounded)
 * until the device answers again, so the late return happens in the test. */
static void case_round_close_stuck(void)
{
    use_scenario("device 0\ndevice 1\nhang 1 util 4000 after 1 times 1\n");
    void *ctx = round_open(2, 2000000000ull);
    if (!ctx)
        return;
    unsigned flags[2] = {0, 0};
    gp_device_sample s[2];
    gp_status st[2];
    gp_error err[2];
    gp_backend_nvml.read_round(ctx, 2, flags, s, st, err);
    CHECK_INT(st[1], GP_OK);
    gp_backend_nvml.read_round(ctx, 2, flags, s, st, err);
    CHECK_INT(st[0], GP_OK);
    CHECK_INT(st[1], GP_ERR_TIMEOUT);
    gp_backend_nvml.stop(ctx);
    gp_backend_nvml.close(ctx);
    ctx = round_open(2, 2000000000ull);
    if (!ctx)
        return;
    st[1] = GP_ERR_TIMEOUT;
    for (int i = 0; i < 600 && st[1] == GP_ERR_TIMEOUT; i++) {
        nap_ms(50);
        gp_backend_nvml.read_round(ctx, 2, flags, s, st, err);
        CHECK_INT(st[0], GP_OK);
    }
    CHECK_INT(st[1], GP_OK);
    gp_backend_nvml.stop(ctx);
    gp_backend_nvml.close(ctx);
}

/* Runs a case in a child process; returns its failures. */
static int run_case(const char *name, void (*fn)(void))
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        fn();
        fflush(stdout);
        _exit(check_failed_ ? 1 : 0);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    int ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
    if (!ok)
        fprintf(stderr, "case %s failed (status 0x%x)\n", name, st);
    CHECK(ok);
    return !ok;
}

int main(void)
{
    fake_new = check_env("GP_TEST_FAKE_NVML");
    snprintf(scenario_path, sizeof scenario_path, "%s/nvml-hang-%ld.txt",
             getenv("GP_TEST_BINARY_DIR") ? getenv("GP_TEST_BINARY_DIR") : "/tmp", (long)getpid());
    run_case("read_hangs", case_read_hangs);
    run_case("stop_during_hang", case_stop_during_hang);
    run_case("discovery_hangs", case_discovery_hangs);
    run_case("init_hangs", case_init_hangs);
    run_case("recovers", case_recovers);
    run_case("runner_post_wait", case_runner_post_wait);
    run_case("runner_paced", case_runner_paced);
    run_case("paced_one_sleep", case_paced_one_sleep);
    run_case("paced_stop_cancels", case_paced_stop_cancels);
    run_case("round_hangs", case_round_hangs);
    run_case("round_hang_first", case_round_hang_first);
    run_case("round_hang_last", case_round_hang_last);
    run_case("round_two_hang", case_round_two_hang);
    run_case("round_one_post", case_round_one_post);
    run_case("round_energy", case_round_energy);
    run_case("round_late_answer", case_round_late_answer);
    run_case("round_close_stuck", case_round_close_stuck);
    unlink(scenario_path);
    return check_done("test_nvml_hang");
}
