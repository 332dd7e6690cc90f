/*
 * shop.c — a shop dashboard: one structured state, derived totals, and
 * "views" that re-render only when what they show changed.
 *
 * In SwiftUI this would be
 *
 *     @Observable final class Cart {
 *         var items: [Item] = [...]; var coupon: String? = nil
 *         var subtotal: Int { items.reduce(0) { $0 + $1.price * $1.qty } }
 *         var discount: Int { ... coupon ... }
 *         var total: Int { subtotal - discount }
 *     }
 *     struct TotalLine: View { var body: some View { Text(cart.total) } }
 *
 * Here:
 *  - the cart is ONE state holding JSON-like data (prices in integer cents):
 *      {"items":[{"name":"tea","price":350,"qty":2}, ...], "coupon":null}
 *    edited in place through JSON Pointer paths (tether_state_set_path_json
 *    on /items/0/qty, appends through /items/-, /coupon, removals);
 *  - subtotal, item count, basket text, discount and total are COMPUTEDs:
 *    derived on demand, cached, and cut off when they come out equal;
 *  - each dashboard line is an EFFECT that "renders" (appends a line to an
 *    in-memory log) — and it re-renders only when its own input changed:
 *    applying a coupon does not re-render the subtotal line, renaming an item
 *    re-renders only the basket line, and two price edits that cancel out
 *    re-render nothing at all;
 *  - a multi-field edit goes in a BATCH, so every line renders once, with
 *    the final values, instead of once per field;
 *  - tether_track is the view.needsUpdate() of withObservationTracking: told
 *    once that the total changed, then re-armed by "re-rendering".
 * The program checks the rendered log exactly, step by step (which lines,
 * how many times), flushing between steps.
 *
 * Build: cc -std=c99 shop.c $(pkg-config --cflags --libs tether) -lpthread
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cases.h"
#include "check.h"
#include "tether.h"

/* ---- the model ------------------------------------------------------------ */

typedef struct shop {
  tether_state_t cart;
  tether_computed_t subtotal, count, basket, discount, total;
} shop_t;

/* Reads the int member `field` of item i of the items array. */
static int item_int(const tether_value_t *items, size_t i, const char *field, int64_t *out) {
  char pointer[64];
  tether_value_t *v = NULL;
  int rc;
  snprintf(pointer, sizeof pointer, "/%lu/%s", (unsigned long)i, field);
  if ((rc = tether_value_get_path(items, pointer, &v)) != TETHER_OK) return rc;
  rc = tether_value_get_int(v, out);
  tether_value_free(v);
  return rc;
}

/* subtotal = sum of price * qty. A compute callback reads the cart with the
 * ordinary get functions; those reads are its dependencies. */
static int compute_subtotal(tether_value_t *result, void *user_data) {
  shop_t *shop = user_data;
  tether_value_t *items = NULL;
  size_t n = 0, i;
  int64_t sum = 0, price, qty;
  int rc = tether_state_get_path(shop->cart, "/items", &items);
  if (rc == TETHER_OK) rc = tether_value_length(items, &n);
  for (i = 0; rc == TETHER_OK && i < n; i++) {
    rc = item_int(items, i, "price", &price);
    if (rc == TETHER_OK) rc = item_int(items, i, "qty", &qty);
    sum += price * qty;
  }
  tether_value_free(items);
  if (rc != TETHER_OK) return rc; /* cached and handed to readers */
  return tether_value_set_int(result, sum);
}

/* count = sum of qty. */
static int compute_count(tether_value_t *result, void *user_data) {
  shop_t *shop = user_data;
  tether_value_t *items = NULL;
  size_t n = 0, i;
  int64_t sum = 0, qty;
  int rc = tether_state_get_path(shop->cart, "/items", &items);
  if (rc == TETHER_OK) rc = tether_value_length(items, &n);
  for (i = 0; rc == TETHER_OK && i < n; i++) {
    rc = item_int(items, i, "qty", &qty);
    sum += qty;
  }
  tether_value_free(items);
  if (rc != TETHER_OK) return rc;
  return tether_value_set_int(result, sum);
}

/* basket = "tea x2, scone x1": names and quantities, no prices. */
static int compute_basket(tether_value_t *result, void *user_data) {
  shop_t *shop = user_data;
  tether_value_t *items = NULL, *name = NULL;
  size_t n = 0, i, used = 0;
  int64_t qty;
  char text[256], pointer[32], nbuf[64];
  int rc = tether_state_get_path(shop->cart, "/items", &items);
  text[0] = '\0';
  if (rc == TETHER_OK) rc = tether_value_length(items, &n);
  for (i = 0; rc == TETHER_OK && i < n; i++) {
    snprintf(pointer, sizeof pointer, "/%lu/name", (unsigned long)i);
    rc = tether_value_get_path(items, pointer, &name);
    if (rc == TETHER_OK) rc = tether_value_get_string(name, nbuf, sizeof nbuf, NULL);
    if (rc == TETHER_OK) rc = item_int(items, i, "qty", &qty);
    tether_value_free(name);
    name = NULL;
    if (rc == TETHER_OK && used < sizeof text)
      used += (size_t)snprintf(text + used, sizeof text - used, "%s%s x%lld", i ? ", " : "", nbuf,
                               (long long)qty);
  }
  tether_value_free(items);
  if (rc != TETHER_OK) return rc;
  return tether_value_set_string(result, text, -1);
}

/* discount from the coupon: null -> 0, "SAVE10" -> 10 %, "FIVEOFF" -> 5.00
 * (at most the subtotal), anything else -> 0. */
static int compute_discount(tether_value_t *result, void *user_data) {
  shop_t *shop = user_data;
  tether_value_t *coupon = NULL;
  int64_t subtotal = 0, discount = 0;
  char code[32] = "";
  int rc = tether_state_get_path(shop->cart, "/coupon", &coupon);
  if (rc != TETHER_OK) return rc;
  if (tether_value_type(coupon) == TETHER_TYPE_STRING)
    (void)tether_value_get_string(coupon, code, sizeof code, NULL);
  tether_value_free(coupon);
  if (code[0] != '\0') { /* only a coupon makes the discount read the subtotal */
    if ((rc = tether_computed_get_int(shop->subtotal, &subtotal)) != TETHER_OK) return rc;
    if (strcmp(code, "SAVE10") == 0) discount = subtotal / 10;
    if (strcmp(code, "FIVEOFF") == 0) discount = subtotal < 500 ? subtotal : 500;
  }
  return tether_value_set_int(result, discount);
}

/* total = subtotal - discount. */
static int compute_total(tether_value_t *result, void *user_data) {
  shop_t *shop = user_data;
  int64_t subtotal, discount;
  int rc = tether_computed_get_int(shop->subtotal, &subtotal);
  if (rc == TETHER_OK) rc = tether_computed_get_int(shop->discount, &discount);
  if (rc != TETHER_OK) return rc;
  return tether_value_set_int(result, subtotal - discount);
}

/* ---- the rendered log ---------------------------------------------------------- */

#define MAX_RENDERS 128

typedef struct render {
  int step;
  int slot; /* which line: its place on the dashboard */
  char text[96];
} render_t;

static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static render_t renders[MAX_RENDERS];
static int nrenders = 0;
static int current_step = 0;

static void render(int slot, const char *text) {
  pthread_mutex_lock(&log_mu);
  if (nrenders < MAX_RENDERS) {
    renders[nrenders].step = current_step;
    renders[nrenders].slot = slot;
    snprintf(renders[nrenders].text, sizeof renders[nrenders].text, "%s", text);
  }
  nrenders++;
  pthread_mutex_unlock(&log_mu);
}

/* ---- the dashboard lines: one effect each ----------------------------------- */

enum { SLOT_BASKET, SLOT_COUNT, SLOT_SUBTOTAL, SLOT_DISCOUNT, SLOT_TOTAL, NSLOTS };
enum { SHOW_TEXT, SHOW_NUMBER, SHOW_MONEY };

typedef struct line {
  int slot;
  const char *label;
  tether_computed_t source;
  int show;
  int runs;
} line_t;

/* The effect body: read the computed, render the line. */
static void render_line(tether_effect_t effect, void *user_data) {
  line_t *l = user_data;
  char text[96], value[80];
  int64_t n = 0;
  int rc;
  (void)effect;
  if (l->show == SHOW_TEXT) {
    rc = tether_computed_get_json(l->source, 0, value, sizeof value, NULL);
    if (rc == TETHER_OK) { /* strip the JSON quotes */
      size_t len = strlen(value);
      if (len >= 2) {
        memmove(value, value + 1, len - 2);
        value[len - 2] = '\0';
      }
    }
  } else {
    rc = tether_computed_get_int(l->source, &n);
    if (l->show == SHOW_MONEY)
      snprintf(value, sizeof value, "%s%lld.%02lld", n < 0 ? "-" : "", llabs(n) / 100,
               llabs(n) % 100);
    else
      snprintf(value, sizeof value, "%lld", (long long)n);
  }
  if (rc != TETHER_OK) snprintf(value, sizeof value, "(%s)", tether_strerror(rc));
  snprintf(text, sizeof text, "%s: %s", l->label, value);
  pthread_mutex_lock(&log_mu);
  l->runs++;
  pthread_mutex_unlock(&log_mu);
  render(l->slot, text);
}

/* ---- checking a step --------------------------------------------------------- */

/* The lines rendered during `step`, one per line, in dashboard order. Effects
 * of one round all run, each once, but tether.h does not promise in which
 * order, so they are listed by dashboard slot (printing the actual order). */
static void rendered_in_step(int step, char *out, size_t size) {
  int i, slot, n;
  size_t used = 0;
  char actual[512];
  size_t aused = 0;
  out[0] = '\0';
  actual[0] = '\0';
  pthread_mutex_lock(&log_mu);
  n = nrenders < MAX_RENDERS ? nrenders : MAX_RENDERS;
  for (slot = 0; slot < NSLOTS; slot++) {
    for (i = 0; i < n; i++) {
      if (renders[i].step != step || renders[i].slot != slot) continue;
      if (used < size)
        used += (size_t)snprintf(out + used, size - used, "%s%s", used ? "\n" : "",
                                 renders[i].text);
    }
  }
  for (i = 0; i < n; i++) {
    if (renders[i].step != step) continue;
    if (aused < sizeof actual)
      aused += (size_t)snprintf(actual + aused, sizeof actual - aused, "%s%s",
                                aused ? "\n" : "", renders[i].text);
  }
  pthread_mutex_unlock(&log_mu);
  if (strcmp(out, actual) != 0)
    printf("  (rendered in this order:\n%s\n  )\n", actual);
}

static void begin_step(int step, const char *what) {
  pthread_mutex_lock(&log_mu);
  current_step = step;
  pthread_mutex_unlock(&log_mu);
  printf("step %d: %s\n", step, what);
}

/* Waits for the loop, prints what rendered, and checks it is exactly
 * `expected` (lines joined by '\n'; "" for nothing). */
static void end_step_(tether_runtime_t rt, int step, const char *expected, const char *file,
                      int line) {
  char got[1024];
  const char *p;
  CHECK_OK(tether_runtime_flush(rt));
  rendered_in_step(step, got, sizeof got);
  if (got[0] == '\0') {
    printf("  (nothing re-rendered)\n");
  } else {
    printf("  | ");
    for (p = got; *p; p++) {
      putchar(*p);
      if (*p == '\n') printf("  | ");
    }
    putchar('\n');
  }
  check_str_eq_(got, expected, "rendered lines", "expected", file, line);
}
#define END_STEP(rt, step, expected) end_step_((rt), (step), (expected), __FILE__, __LINE__)

/* ---- the view.needsUpdate() analog -------------------------------------------- */

typedef struct total_view {
  tether_computed_t total;
  int64_t shown;    /* what the last "render" read */
  int needs_update; /* on_change calls */
} total_view_t;

static void total_view_body(void *user_data) { /* withObservationTracking { body } */
  total_view_t *v = user_data;
  (void)tether_computed_get_int(v->total, &v->shown);
}

static void total_view_needs_update(tether_tracking_t t, uint64_t revision, void *user_data) {
  total_view_t *v = user_data; /* onChange: { needsUpdate() } */
  (void)t;
  (void)revision;
  pthread_mutex_lock(&log_mu);
  v->needs_update++;
  pthread_mutex_unlock(&log_mu);
}

static int needs_update(total_view_t *v) {
  int n;
  pthread_mutex_lock(&log_mu);
  n = v->needs_update;
  pthread_mutex_unlock(&log_mu);
  return n;
}

/* ------------------------------------------------------------------------------ */

/* Registered in cases.h: the whole story of the lesson of the same name,
 * with every check it made when it was the lesson itself. */
TEST_CASE(scenario_shop) {
  tether_runtime_t rt;
  shop_t shop;
  line_t lines[NSLOTS];
  tether_effect_t effects[NSLOTS];
  tether_tracking_t tracking;
  total_view_t view;
  uint64_t rev;
  char json[512];
  int i;

  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return check_report("shop");

  /* The cart: one state, structured. */
  CHECK_OK(tether_state_new_json(rt,
                                 "{\"items\":[{\"name\":\"tea\",\"price\":350,\"qty\":2},"
                                 "{\"name\":\"scone\",\"price\":275,\"qty\":1}],"
                                 "\"coupon\":null}",
                                 -1, 0, &shop.cart));

  /* The derived values. Nothing is computed yet: computeds are lazy. */
  CHECK_OK(tether_computed_new(rt, compute_subtotal, &shop, NULL, &shop.subtotal));
  CHECK_OK(tether_computed_new(rt, compute_count, &shop, NULL, &shop.count));
  CHECK_OK(tether_computed_new(rt, compute_basket, &shop, NULL, &shop.basket));
  CHECK_OK(tether_computed_new(rt, compute_discount, &shop, NULL, &shop.discount));
  CHECK_OK(tether_computed_new(rt, compute_total, &shop, NULL, &shop.total));

  /* The dashboard: one effect per line, rendered on the loop thread. */
  {
    static const char *labels[NSLOTS] = {"basket", "items", "subtotal", "discount", "total"};
    tether_computed_t sources[NSLOTS];
    static const int shows[NSLOTS] = {SHOW_TEXT, SHOW_NUMBER, SHOW_MONEY, SHOW_MONEY, SHOW_MONEY};
    sources[SLOT_BASKET] = shop.basket;
    sources[SLOT_COUNT] = shop.count;
    sources[SLOT_SUBTOTAL] = shop.subtotal;
    sources[SLOT_DISCOUNT] = shop.discount;
    sources[SLOT_TOTAL] = shop.total;
    begin_step(0, "open the dashboard");
    for (i = 0; i < NSLOTS; i++) {
      lines[i].slot = i;
      lines[i].label = labels[i];
      lines[i].source = sources[i];
      lines[i].show = shows[i];
      lines[i].runs = 0;
      CHECK_OK(tether_effect_new(rt, 0, render_line, NULL, &lines[i], NULL, &effects[i]));
    }
  }
  END_STEP(rt, 0,
           "basket: tea x2, scone x1\n"
           "items: 3\n"
           "subtotal: 9.75\n"
           "discount: 0.00\n"
           "total: 9.75");

  /* One field deep inside the cart. The discount (no coupon: 0) comes out
   * equal, so its line does not re-render. */
  begin_step(1, "set /items/0/qty to 3");
  CHECK_OK(tether_state_set_path_json(shop.cart, "/items/0/qty", "3", -1));
  END_STEP(rt, 1,
           "basket: tea x3, scone x1\n"
           "items: 4\n"
           "subtotal: 13.25\n"
           "total: 13.25");

  /* Append through "/-". */
  begin_step(2, "append jam through /items/-");
  CHECK_OK(tether_state_set_path_json(shop.cart, "/items/-",
                                      "{\"name\":\"jam\",\"price\":400,\"qty\":1}", -1));
  END_STEP(rt, 2,
           "basket: tea x3, scone x1, jam x1\n"
           "items: 5\n"
           "subtotal: 17.25\n"
           "total: 17.25");

  /* A coupon: only the discount and the total move. Meanwhile a "view" that
   * shows the total is tracked with tether_track (withObservationTracking):
   * it is told once that it needs an update. */
  view.total = shop.total;
  view.shown = -1;
  view.needs_update = 0;
  CHECK_OK(tether_track(rt, 0, total_view_body, total_view_needs_update, &view, NULL, &tracking));
  CHECK_INT_EQ(view.shown, 1725); /* the body ran now */
  begin_step(3, "set /coupon to \"SAVE10\"");
  CHECK_OK(tether_state_set_path_json(shop.cart, "/coupon", "\"SAVE10\"", -1));
  END_STEP(rt, 3,
           "discount: 1.72\n"
           "total: 15.53");
  CHECK_INT_EQ(needs_update(&view), 1);
  /* The view re-renders: run its body again under a new tracking. */
  CHECK_OK(tether_track(rt, 0, total_view_body, total_view_needs_update, &view, NULL, &tracking));
  CHECK_INT_EQ(view.shown, 1553);

  /* A multi-field edit in a batch: every line renders once, with the final
   * values — never a half-edited cart (tea x1 with the old coupon, say). */
  begin_step(4, "batch: /items/0/qty = 1, /items/1/price = 300, /coupon = \"FIVEOFF\"");
  CHECK_OK(tether_batch_begin(rt));
  CHECK_OK(tether_state_set_path_json(shop.cart, "/items/0/qty", "1", -1));
  CHECK_OK(tether_state_set_path_json(shop.cart, "/items/1/price", "300", -1));
  CHECK_OK(tether_state_set_path_json(shop.cart, "/coupon", "\"FIVEOFF\"", -1));
  CHECK_OK(tether_batch_end(rt));
  END_STEP(rt, 4,
           "basket: tea x1, scone x1, jam x1\n"
           "items: 3\n"
           "subtotal: 10.50\n"
           "discount: 5.00\n"
           "total: 5.50");
  CHECK_INT_EQ(needs_update(&view), 2);
  CHECK_OK(tether_track(rt, 0, total_view_body, total_view_needs_update, &view, NULL, &tracking));
  CHECK_INT_EQ(view.shown, 550);

  /* A rename: only the basket line shows names. */
  begin_step(5, "set /items/2/name to \"marmalade\"");
  CHECK_OK(tether_state_set_path_json(shop.cart, "/items/2/name", "\"marmalade\"", -1));
  END_STEP(rt, 5, "basket: tea x1, scone x1, marmalade x1");

  /* An equal write changes nothing at all (not even the revision). */
  begin_step(6, "set /items/0/qty to 1 again");
  CHECK_OK(tether_runtime_revision(rt, &rev));
  CHECK_OK(tether_state_set_path_json(shop.cart, "/items/0/qty", "1", -1));
  END_STEP(rt, 6, "");
  {
    uint64_t now = 0;
    CHECK_OK(tether_runtime_revision(rt, &now));
    CHECK_INT_EQ(now, rev);
  }

  /* Two price edits that cancel out: the cart changed (two commits), the
   * subtotal recomputes to the same 10.50, and equality cutoff stops there. */
  begin_step(7, "batch: tea 3.50 -> 4.00, scone 3.00 -> 2.50");
  CHECK_OK(tether_runtime_revision(rt, &rev));
  CHECK_OK(tether_batch_begin(rt));
  CHECK_OK(tether_state_set_path_json(shop.cart, "/items/0/price", "400", -1));
  CHECK_OK(tether_state_set_path_json(shop.cart, "/items/1/price", "250", -1));
  CHECK_OK(tether_batch_end(rt));
  END_STEP(rt, 7, "");
  {
    uint64_t now = 0;
    CHECK_OK(tether_runtime_revision(rt, &now));
    CHECK_INT_EQ(now, rev + 2);
  }
  CHECK_INT_EQ(needs_update(&view), 2); /* the total did not change */

  /* Removing an item. The discount (5.00, capped) stays: not re-rendered. */
  begin_step(8, "remove /items/0");
  CHECK_OK(tether_state_remove_path(shop.cart, "/items/0"));
  END_STEP(rt, 8,
           "basket: scone x1, marmalade x1\n"
           "items: 2\n"
           "subtotal: 6.50\n"
           "total: 1.50");
  CHECK_INT_EQ(needs_update(&view), 3); /* told once more; it disarmed again */

  /* The whole story, in numbers: how often each line rendered. */
  pthread_mutex_lock(&log_mu);
  CHECK_INT_EQ(lines[SLOT_BASKET].runs, 6);   /* steps 0 1 2 4 5 8 */
  CHECK_INT_EQ(lines[SLOT_COUNT].runs, 5);    /* steps 0 1 2 4 8 */
  CHECK_INT_EQ(lines[SLOT_SUBTOTAL].runs, 5); /* steps 0 1 2 4 8 */
  CHECK_INT_EQ(lines[SLOT_DISCOUNT].runs, 3); /* steps 0 3 4 */
  CHECK_INT_EQ(lines[SLOT_TOTAL].runs, 6);    /* steps 0 1 2 3 4 8 */
  CHECK_INT_EQ(nrenders, 25);
  pthread_mutex_unlock(&log_mu);

  CHECK_OK(tether_state_get_json(shop.cart, 0, json, sizeof json, NULL));
  CHECK_STR_EQ(json, "{\"items\":[{\"name\":\"scone\",\"price\":250,\"qty\":1},"
                     "{\"name\":\"marmalade\",\"price\":400,\"qty\":1}],\"coupon\":\"FIVEOFF\"}");
  printf("shop: cart %s\n", json);

  for (i = 0; i < NSLOTS; i++) CHECK_OK(tether_effect_free(effects[i]));
  CHECK_OK(tether_runtime_free(rt)); /* frees the cart and the computeds */
  return check_report("shop");
}
