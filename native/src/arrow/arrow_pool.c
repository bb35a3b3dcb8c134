/*
 * arrow_pool.c: buffers handed back by the consumers of exported batches, kept for the next
 * batches (arrow.h, mc_arrow_pool). A batch's buffers leave through the Arrow C Data
 * Interface; when the consumer calls release, they come back here instead of to free(), and
 * the builder takes them for the next batch: memory the process already touched, so a long
 * result costs no page faults and no zeroing by the kernel after its first batches.
 *
 * Consumers may release on any thread, so the pool has a mutex and a reference count: its
 * owner (the decoder) holds one reference and every exported child array one more. The pool
 * is freed by whichever lets go last; once the owner closed it, returned buffers are freed.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdlib.h>

#include "mssqlcdc/arrow.h"

#define POOL_SLOTS 96

struct mc_arrow_pool {
  pthread_mutex_t mu;
  int64_t refs;
  bool closed;
  size_t max_bytes;
  size_t bytes;
  int n;
  void *data[POOL_SLOTS];
  size_t cap[POOL_SLOTS];
};

mc_arrow_pool *mc_arrow_pool_new(size_t max_bytes) {
  mc_arrow_pool *pool = calloc(1, sizeof *pool);
  if (pool == NULL) return NULL;
  if (pthread_mutex_init(&pool->mu, NULL) != 0) {
    free(pool);
    return NULL;
  }
  pool->refs = 1;
  pool->max_bytes = max_bytes;
  return pool;
}

/* Frees the cached buffers; the caller holds the mutex. */
static void drop_cached(mc_arrow_pool *pool) {
  for (int i = 0; i < pool->n; i++) free(pool->data[i]);
  pool->n = 0;
  pool->bytes = 0;
}

/* Drops one reference; the last one frees the pool. */
static void unref(mc_arrow_pool *pool) {
  pthread_mutex_lock(&pool->mu);
  bool last = --pool->refs == 0;
  pthread_mutex_unlock(&pool->mu);
  if (last) {
    drop_cached(pool);
    pthread_mutex_destroy(&pool->mu);
    free(pool);
  }
}

void mc_arrow_pool_close(mc_arrow_pool *pool) {
  if (pool == NULL) return;
  pthread_mutex_lock(&pool->mu);
  pool->closed = true;
  drop_cached(pool);
  pthread_mutex_unlock(&pool->mu);
  unref(pool);
}

void mc_arrow_pool_trim(mc_arrow_pool *pool) {
  if (pool == NULL) return;
  pthread_mutex_lock(&pool->mu);
  drop_cached(pool);
  pthread_mutex_unlock(&pool->mu);
}

void mc_arrow_pool_ref(mc_arrow_pool *pool) {
  pthread_mutex_lock(&pool->mu);
  pool->refs++;
  pthread_mutex_unlock(&pool->mu);
}

void mc_arrow_pool_unref(mc_arrow_pool *pool) { unref(pool); }

void *mc_arrow_pool_take(mc_arrow_pool *pool, size_t need, size_t *capacity) {
  if (pool == NULL) return NULL;
  void *found = NULL;
  pthread_mutex_lock(&pool->mu);
  int best = -1;
  for (int i = 0; i < pool->n; i++) { /* the smallest that fits */
    if (pool->cap[i] >= need && (best < 0 || pool->cap[i] < pool->cap[best])) best = i;
  }
  if (best >= 0) {
    found = pool->data[best];
    *capacity = pool->cap[best];
    pool->bytes -= pool->cap[best];
    pool->n--;
    pool->data[best] = pool->data[pool->n];
    pool->cap[best] = pool->cap[pool->n];
  }
  pthread_mutex_unlock(&pool->mu);
  return found;
}

void mc_arrow_pool_give(mc_arrow_pool *pool, void *data, size_t capacity) {
  if (data == NULL) return;
  if (pool != NULL) {
    pthread_mutex_lock(&pool->mu);
    bool keep = !pool->closed && pool->n < POOL_SLOTS && capacity <= pool->max_bytes &&
                pool->bytes <= pool->max_bytes - capacity;
    if (keep) {
      pool->data[pool->n] = data;
      pool->cap[pool->n] = capacity;
      pool->n++;
      pool->bytes += capacity;
    }
    pthread_mutex_unlock(&pool->mu);
    if (keep) return;
  }
  free(data);
}
