/* SPDX-License-Identifier: Apache-2.0 */
/*
 * trace_summary.c - the summary infinirt-trace prints, in the manner of
 * `nsys stats`: per call name its count and time figures, per stream its
 * busy time and idle gaps, per device the allocator's peaks and counts.
 * Figures are computed in integer nanoseconds and printed in microseconds.
 */
#include "trace.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    uint32_t name;
    int64_t dur;
} call_dur;

typedef struct {
    const char *name;
    uint64_t count;
    int64_t total, mean, p50, p99, max;
} call_stats;

typedef struct {
    const trace_lane *lane;
    int64_t busy, idle, longest;
    uint64_t gaps;
} stream_stats;

static int64_t add_sat(int64_t a, int64_t b)
{
    return a > INT64_MAX - b ? INT64_MAX : a + b;
}

/* NS as microseconds with three decimals, in BUF. */
static const char *us(char *buf, size_t size, int64_t ns)
{
    const char *sign = ns < 0 ? "-" : "";
    uint64_t a = ns < 0 ? 0 - (uint64_t)ns : (uint64_t)ns;
    snprintf(buf, size, "%s%llu.%03llu", sign, (unsigned long long)(a / 1000), (unsigned long long)(a % 1000));
    return buf;
}

static int cmp_call_dur(const void *a, const void *b)
{
    const call_dur *x = a, *y = b;
    if (x->name != y->name)
        return x->name < y->name ? -1 : 1;
    return x->dur < y->dur ? -1 : x->dur > y->dur;
}

static int cmp_call_total(const void *a, const void *b)
{
    const call_stats *x = a, *y = b;
    if (x->total != y->total)
        return x->total > y->total ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* The nearest-rank percentile Q (of 100) of N sorted durations. */
static int64_t percentile(const call_dur *d, size_t n, unsigned q)
{
    size_t rank = (n * q + 99) / 100; /* ceil(n * q / 100), 1-based */
    return d[rank > 0 ? rank - 1 : 0].dur;
}

/* Per call name, sorted by total time; NULL where there are no calls or
 * memory ran out (*n says which: 0, or -1 cast). */
static call_stats *collect_calls(const trace_model *m, size_t *n_out, int64_t *grand_total)
{
    size_t n = 0, k = 0;
    for (size_t i = 0; i < m->lanes.n; i++)
        n += m->lanes.items[i].calls.n;
    *n_out = 0;
    *grand_total = 0;
    if (n == 0)
        return NULL;
    call_dur *all = malloc(n * sizeof(*all));
    call_stats *stats = malloc(n * sizeof(*stats));
    if (all == NULL || stats == NULL) {
        free(all);
        free(stats);
        *n_out = (size_t)-1;
        return NULL;
    }
    for (size_t i = 0; i < m->lanes.n; i++)
        for (size_t j = 0; j < m->lanes.items[i].calls.n; j++)
            all[k++] = (call_dur){m->lanes.items[i].calls.items[j].name, m->lanes.items[i].calls.items[j].dur};
    qsort(all, n, sizeof(*all), cmp_call_dur);
    size_t groups = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        int64_t total = 0;
        while (j < n && all[j].name == all[i].name)
            total = add_sat(total, all[j++].dur);
        size_t count = j - i;
        stats[groups++] = (call_stats){
            .name = m->names.items[all[i].name],
            .count = count,
            .total = total,
            .mean = total / (int64_t)count,
            .p50 = percentile(all + i, count, 50),
            .p99 = percentile(all + i, count, 99),
            .max = all[j - 1].dur,
        };
        *grand_total = add_sat(*grand_total, total);
        i = j;
    }
    free(all);
    qsort(stats, groups, sizeof(*stats), cmp_call_total);
    *n_out = groups;
    return stats;
}

/* The union of a stream's (sorted) work spans: busy time and the gaps
 * between its first start and its last end. */
static stream_stats stream_figures(const trace_lane *l)
{
    stream_stats s = {.lane = l};
    if (l->work.n == 0)
        return s;
    int64_t cur_start = l->work.items[0].start, cur_end = cur_start + l->work.items[0].dur;
    for (size_t i = 1; i < l->work.n; i++) {
        int64_t start = l->work.items[i].start, end = start + l->work.items[i].dur;
        if (start > cur_end) {
            s.busy += cur_end - cur_start;
            int64_t gap = start - cur_end;
            s.gaps++;
            s.idle += gap;
            if (gap > s.longest)
                s.longest = gap;
            cur_start = start;
            cur_end = end;
        } else if (end > cur_end) {
            cur_end = end;
        }
    }
    s.busy += cur_end - cur_start;
    return s;
}

static int cmp_stream(const void *a, const void *b)
{
    const stream_stats *x = a, *y = b;
    if (x->busy != y->busy)
        return x->busy > y->busy ? -1 : 1;
    char bx[64], by[64];
    return strcmp(trace_lane_label(x->lane, bx, sizeof(bx)), trace_lane_label(y->lane, by, sizeof(by)));
}

static int cmp_device(const void *a, const void *b)
{
    const trace_device *const *x = a, *const *y = b;
    return strcmp((*x)->name, (*y)->name);
}

static void print_header(FILE *out, const trace_model *m, const char *source)
{
    char b[48];
    int64_t span = m->have_time ? m->t_max - m->t_min : 0;
    fprintf(out, "infinirt trace %s: infinirt %s, %llu events over %s us\n", source,
            m->version != NULL ? m->version : "(version unknown)", (unsigned long long)m->events,
            us(b, sizeof(b), span));
    fprintf(
        out,
        "Events: %llu calls, %llu stream ops, %llu flow events, %llu allocator events, %llu memory counters, "
        "%llu start-up spans, %llu trace notes, %llu metadata; %llu ignored (%llu of unknown kinds, %llu incomplete)\n",
        (unsigned long long)m->calls, (unsigned long long)m->work, (unsigned long long)m->flows,
        (unsigned long long)m->alloc_events, (unsigned long long)m->counters, (unsigned long long)m->startups,
        (unsigned long long)m->notes, (unsigned long long)m->metadata,
        (unsigned long long)(m->unknown + m->incomplete), (unsigned long long)m->unknown,
        (unsigned long long)m->incomplete);
    if (m->truncated)
        fprintf(out, "WARNING: the trace is cut short at byte %zu (%s): this summary covers the events before it\n",
                m->truncated_at, m->truncated_what);
    uint64_t dropped = m->dropped_other > m->dropped_instants ? m->dropped_other : m->dropped_instants;
    if (dropped > 0)
        fprintf(out, "WARNING: the writer dropped %llu events (its buffer was full): the figures below miss them\n",
                (unsigned long long)dropped);
}

static int print_calls(FILE *out, const trace_model *m)
{
    size_t n;
    int64_t grand;
    call_stats *st = collect_calls(m, &n, &grand);
    if (st == NULL && n != 0)
        return -1;
    fprintf(out, "\nCalls (times in us, sorted by total time)\n");
    if (n == 0) {
        fprintf(out, "  none\n");
        return 0;
    }
    fprintf(out, "%7s %14s %9s %12s %12s %12s %12s  %s\n", "Time %", "Total", "Count", "Mean", "P50", "P99", "Max",
            "Name");
    for (size_t i = 0; i < n; i++) {
        char t[48], mean[48], p50[48], p99[48], mx[48];
        double pct = grand > 0 ? 100.0 * (double)st[i].total / (double)grand : 0.0;
        fprintf(out, "%7.2f %14s %9llu %12s %12s %12s %12s  %s\n", pct, us(t, sizeof(t), st[i].total),
                (unsigned long long)st[i].count, us(mean, sizeof(mean), st[i].mean), us(p50, sizeof(p50), st[i].p50),
                us(p99, sizeof(p99), st[i].p99), us(mx, sizeof(mx), st[i].max), st[i].name);
    }
    free(st);
    return 0;
}

static int print_streams(FILE *out, const trace_model *m)
{
    size_t n = 0;
    for (size_t i = 0; i < m->lanes.n; i++)
        n += trace_lane_is_stream(&m->lanes.items[i]) ? 1 : 0;
    int64_t span = m->have_time ? m->t_max - m->t_min : 0;
    char b[48];
    fprintf(out,
            "\nStreams (busy: the union of its work spans, %% of the trace's %s us; gaps: idle time between "
            "its first and last work)\n",
            us(b, sizeof(b), span));
    if (n == 0) {
        fprintf(out, "  none\n");
        return 0;
    }
    stream_stats *st = malloc(n * sizeof(*st));
    if (st == NULL)
        return -1;
    size_t k = 0;
    for (size_t i = 0; i < m->lanes.n; i++)
        if (trace_lane_is_stream(&m->lanes.items[i]))
            st[k++] = stream_figures(&m->lanes.items[i]);
    qsort(st, n, sizeof(*st), cmp_stream);
    fprintf(out, "%14s %7s %7s %6s %14s %14s  %s\n", "Busy", "Busy %", "Ops", "Gaps", "Idle", "Longest gap",
            "Stream");
    for (size_t i = 0; i < n; i++) {
        char busy[48], idle[48], longest[48], label[64], pct[16];
        if (span > 0)
            snprintf(pct, sizeof(pct), "%.2f", 100.0 * (double)st[i].busy / (double)span);
        else
            snprintf(pct, sizeof(pct), "-");
        fprintf(out, "%14s %7s %7zu %6llu %14s %14s  %s\n", us(busy, sizeof(busy), st[i].busy), pct,
                st[i].lane->work.n, (unsigned long long)st[i].gaps, us(idle, sizeof(idle), st[i].idle),
                us(longest, sizeof(longest), st[i].longest), trace_lane_label(st[i].lane, label, sizeof(label)));
    }
    free(st);
    return 0;
}

static int print_memory(FILE *out, const trace_model *m)
{
    fprintf(out, "\nMemory (bytes, from the allocator's counters; events: its instants)\n");
    if (m->devices.n == 0) {
        fprintf(out, "  none\n");
        return 0;
    }
    const trace_device **devs = malloc(m->devices.n * sizeof(*devs));
    if (devs == NULL)
        return -1;
    for (size_t i = 0; i < m->devices.n; i++)
        devs[i] = &m->devices.items[i];
    qsort(devs, m->devices.n, sizeof(*devs), cmp_device);
    fprintf(out, "%-10s %15s %15s %15s %15s %8s %8s %8s %8s %6s %11s\n", "Device", "Peak allocated", "Peak reserved",
            "End allocated", "End reserved", "Mallocs", "Frees", "Reserves", "Releases", "Trims", "OOM retries");
    for (size_t i = 0; i < m->devices.n; i++) {
        const trace_device *d = devs[i];
        char pa[24] = "-", pr[24] = "-", ea[24] = "-", er[24] = "-";
        if (d->points.n > 0) {
            uint64_t peak_a = 0, peak_r = 0;
            for (size_t k = 0; k < d->points.n; k++) {
                if (d->points.items[k].allocated > peak_a)
                    peak_a = d->points.items[k].allocated;
                if (d->points.items[k].reserved > peak_r)
                    peak_r = d->points.items[k].reserved;
            }
            const trace_point *last = &d->points.items[d->points.n - 1];
            snprintf(pa, sizeof(pa), "%llu", (unsigned long long)peak_a);
            snprintf(pr, sizeof(pr), "%llu", (unsigned long long)peak_r);
            snprintf(ea, sizeof(ea), "%llu", (unsigned long long)last->allocated);
            snprintf(er, sizeof(er), "%llu", (unsigned long long)last->reserved);
        }
        fprintf(out, "%-10s %15s %15s %15s %15s %8llu %8llu %8llu %8llu %6llu %11llu\n", d->name, pa, pr, ea, er,
                (unsigned long long)d->mallocs, (unsigned long long)d->frees, (unsigned long long)d->reserves,
                (unsigned long long)d->releases, (unsigned long long)d->trims, (unsigned long long)d->oom_retries);
    }
    free(devs);
    return 0;
}

static void print_startup(FILE *out, const trace_model *m)
{
    if (m->startup.n == 0)
        return;
    fprintf(out, "\nStart-up (us from the trace's start)\n%14s %14s  %s\n", "Start", "Duration", "Name");
    for (size_t i = 0; i < m->startup.n; i++) {
        char s[48], d[48];
        const trace_span *sp = &m->startup.items[i];
        fprintf(out, "%14s %14s  %s\n", us(s, sizeof(s), sp->start - m->t_min), us(d, sizeof(d), sp->dur),
                m->names.items[sp->name]);
    }
}

int trace_print_summary(FILE *out, const trace_model *m, const char *source)
{
    print_header(out, m, source);
    if (print_calls(out, m) != 0 || print_streams(out, m) != 0 || print_memory(out, m) != 0)
        return -1;
    print_startup(out, m);
    return ferror(out) ? -1 : 0;
}
