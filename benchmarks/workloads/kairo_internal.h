/*
 * kairo_internal.h — what kairo.c and kairo_mux_mol.c share: the state of
 * one built kairo case (BENCHMARKS.md, "Kairo suite") and the node kinds
 * several cases use. Not part of the workloads API (see workloads.h).
 */
#ifndef TETHER_KAIRO_INTERNAL_H
#define TETHER_KAIRO_INTERNAL_H

#include "workloads.h"

#define KAIRO_MAX_ADDS 256   /* broad: 100, mux: 100 */
#define KAIRO_MAX_EFFECTS 128 /* mux: 100 */
#define KAIRO_MUX_WIDTH 100
#define KAIRO_MOL_MAX_RES 64


/* computed(() => in.read() + add) */
typedef struct kairo_add {
  wl_src_t in;
  int64_t add;
} kairo_add_t;

/* effect(() => { in.read(); count++; }) */
typedef struct kairo_effect {
  wl_kairo_t *k;
  wl_src_t in;
} kairo_effect_t;

/* mux: computed(() => mux.read()[index]) */
typedef struct kairo_index {
  wl_kairo_t *k;
  int index;
} kairo_index_t;

/* molBench's effects H, I, J */
typedef struct kairo_mol_effect {
  wl_kairo_t *k;
  wl_src_t in;
  int hard; /* push(hard(in)) instead of push(in) */
} kairo_mol_effect_t;

struct wl_kairo {
  wl_kairo_case_t which;
  wl_report_t report;
  wl_scope_t scope;
  char name[64];

  tether_state_t head;
  wl_src_t c1, c2, c3, c5, last; /* the nodes a case's iter() reads */
  wl_src_t list[16];             /* diamond's five, triangle's ten */
  int n_list;
  long count;                    /* counting effects' runs */
  long c3_runs, effect_runs;     /* avoidablePropagation */

  kairo_add_t adds[KAIRO_MAX_ADDS];
  int n_adds;
  kairo_effect_t effects[KAIRO_MAX_EFFECTS];
  int n_effects;

  /* mux */
  tether_state_t heads[KAIRO_MUX_WIDTH];
  tether_computed_t mux;
  kairo_index_t index_nodes[KAIRO_MUX_WIDTH];
  wl_src_t split[KAIRO_MUX_WIDTH];
  char keys[KAIRO_MUX_WIDTH][12];     /* "0".."99" (sized for any int) */
  char pointers[KAIRO_MUX_WIDTH][13]; /* "/0".."/99" */

  /* molBench */
  tether_state_t a, b;
  wl_src_t mc, md, me, mf, mg;
  kairo_mol_effect_t mol_effects[3];
  int64_t res[KAIRO_MOL_MAX_RES];
  int n_res;
  long mol_i;

  /* scratch values the compute callbacks fill and copy from (made at
   * build, freed after cleanup), so building a map or an array allocates
   * only what the result itself needs */
  tether_value_t *scratch_int;
  tether_value_t *scratch_object;
  tether_value_t *empty_object;
  tether_value_t *empty_array;
};

void kairo_busy(void);
int kairo_add(wl_kairo_t *k, wl_src_t in, int64_t add, wl_src_t *out);
int kairo_counting_effect(wl_kairo_t *k, wl_src_t in);
int kairo_write(wl_kairo_t *k, tether_state_t s, int64_t v);
int64_t kairo_read(wl_kairo_t *k, wl_src_t x);

int kairo_build_mux(wl_kairo_t *k);
int kairo_iter_mux(wl_kairo_t *k);
int kairo_build_mol(wl_kairo_t *k);
int kairo_iter_mol(wl_kairo_t *k);
/* Frees the scratch values (after the scope is closed). */
void kairo_release_values(wl_kairo_t *k);

#endif /* TETHER_KAIRO_INTERNAL_H */
