/* The model landscape and drivers shared by test_search.c and
 * test_search_decide.c. */
#ifndef ACL_TESTS_TUNER_SEARCH_MODEL_H
#define ACL_TESTS_TUNER_SEARCH_MODEL_H

#include <stdint.h>

#include "tuner/search/search.h"

/* A unimodal landscape: per (algo, proto) a base time and a channel peak. */
typedef struct model {
  double base[ACL_NUM_ALGO][ACL_NUM_PROTO]; /* seconds at the peak; 0 = invalid */
  double peak[ACL_NUM_ALGO][ACL_NUM_PROTO];
  double nccl_seconds; /* NCCL's own choice */
  double curv;
} model_t;

/* The model's time of one call of c (drive_time_fn; user is a model_t). */
double model_time(void *user, const acl_candidate_t *c, uint64_t call);
extern const acl_wkey_t key;
/* Ring and Tree, three protocols each; NCCL predicts and runs RING/SIMPLE/16. */
void ring_tree_model(model_t *m, float cost[ACL_NUM_ALGO][ACL_NUM_PROTO]);
/* The descent alone: the exploration budget lifted (its own tests in
 * test_budget.c). */
acl_search_params_t params(void);
/* A search of key started on the ring/tree model with params(). */
void ring_tree_start(acl_search_t *s, model_t *m);
/* The ring/tree model, driven until converged. */
void converge_simple(acl_search_t *s, model_t *m);
/* Converged, then the decision's next call: its id and noise-free time. */
int converged_decision(acl_search_t *s, model_t *m, double *t);
/* A converged search's next call of its decision: its id and noise-free time. */
int decision_next(acl_search_t *s, model_t *m, double *t);

#endif
