/* parallel_for: split [0, count) into `threads` contiguous ranges and run `body` on each,
 * this thread taking the first. Called without the GIL; a range whose thread could not be
 * started runs here. On Windows (no pthreads here) everything runs on this thread. */
#include "native.h"

#ifndef _WIN32
#include <pthread.h>
#endif

typedef struct {
    parallel_body body;
    void *context;
    Py_ssize_t start, stop;
} parallel_range;

static void *run_range(void *arg) {
    parallel_range *range = arg;
    range->body(range->context, range->start, range->stop);
    return NULL;
}

void parallel_for(Py_ssize_t count, int threads, Py_ssize_t min_per_thread, parallel_body body,
                  void *context) {
#ifdef _WIN32
    threads = 1;
#endif
    if (threads > MAX_PARALLEL_THREADS) threads = MAX_PARALLEL_THREADS;
    if (min_per_thread < 1) min_per_thread = 1;
    if (threads < 1 || count < min_per_thread * threads) {
        threads = (int)(count / min_per_thread);
        if (threads < 1) threads = 1;
    }
    parallel_range ranges[MAX_PARALLEL_THREADS];
    Py_ssize_t per = (count + threads - 1) / threads;
    for (int t = 0; t < threads; t++) {
        Py_ssize_t start = t * per < count ? t * per : count;
        Py_ssize_t stop = start + per < count ? start + per : count;
        ranges[t] = (parallel_range){body, context, start, stop};
    }
#ifndef _WIN32
    pthread_t ids[MAX_PARALLEL_THREADS];
    int started[MAX_PARALLEL_THREADS] = {0};
    for (int t = 1; t < threads; t++)
        started[t] = pthread_create(&ids[t], NULL, run_range, &ranges[t]) == 0;
    run_range(&ranges[0]);
    for (int t = 1; t < threads; t++) {
        if (started[t])
            pthread_join(ids[t], NULL);
        else
            run_range(&ranges[t]);
    }
#else
    run_range(&ranges[0]);
#endif
}
