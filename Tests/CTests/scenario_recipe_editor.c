/*
 * recipe_editor.c — a parent owns one structured state and hands a child
 * editor bindings into parts of it (SwiftUI's RecipeEditorConfig).
 *
 *     struct RecipeEditorConfig {
 *         var title = "Pancakes"; var servings = 4
 *         var ingredients: [Ingredient] = [...]; var vegetarian = true
 *     }
 *     struct RecipeView: View {
 *         @State private var config = RecipeEditorConfig()
 *         var body: some View {
 *             RecipeEditor(title: $config.title, servings: $config.servings,
 *                          grams: $config.ingredients[1].grams)
 *         }
 *     }
 *     struct RecipeEditor: View { @Binding var title: String; ... }
 *
 * The child never sees the state handle. It holds tether_binding_t fields,
 * made by the parent's $config (tether_state_binding) narrowed with
 * tether_binding_project ("/title") and tether_binding_index (element 1),
 * which chain: $config -> .ingredients -> [1] -> .grams.
 *
 * What it shows:
 *  - edits made by the child through its bindings are seen by the parent's
 *    observers on the state (SYNC ones before the write returns, a loop
 *    observer after tether_runtime_flush);
 *  - a write through a projection wakes observers of that path and of its
 *    ancestors, never of its siblings ("/servings" sleeps through a rename,
 *    the whole-value observer does not);
 *  - tether_binding_observe on a projection: change->binding is the binding,
 *    change->state the state behind it, change->path the full pointer;
 *  - the path of a projection is checked at each use, because the parent may
 *    replace the value with another shape: TETHER_ENOTFOUND (member gone;
 *    a write creates it), TETHER_ETYPE (a step into a non-container),
 *    TETHER_ERANGE (index past the end; an index projection never appends);
 *  - a binding does not own its state: when the parent frees the state, the
 *    bindings fail with TETHER_ESTALE (and are still freed by their owner).
 *
 * Build: cc -std=c99 recipe_editor.c $(pkg-config --cflags --libs tether) -lpthread
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "cases.h"
#include "check.h"
#include "tether.h"

/* ---- a recorder: what one observer was told ------------------------------ */

/* Everything is copied out of the change (its pointers are borrowed), under a
 * mutex because loop observers run on the runtime's loop thread. */
typedef struct seen {
  pthread_mutex_t mu;
  int calls;
  int destroyed;        /* destroy calls: must end at exactly 1 */
  char path[64];        /* change->path of the last call */
  char old_json[512];   /* "" when old_value was NULL (path named nothing) */
  char new_json[512];   /* "" when new_value was NULL */
  int had_old, had_new;
  uint64_t state_id, binding_id, revision;
  int had_transaction;  /* change->transaction != NULL */
  pthread_t thread;
} seen_t;

static void seen_init(seen_t *s) {
  memset(s, 0, sizeof *s);
  pthread_mutex_init(&s->mu, NULL);
}

static void seen_record(const tether_change_t *change, void *user_data) {
  seen_t *s = user_data;
  pthread_mutex_lock(&s->mu);
  s->calls++;
  snprintf(s->path, sizeof s->path, "%s", change->path ? change->path : "(NULL)");
  s->had_old = change->old_value != NULL;
  s->had_new = change->new_value != NULL;
  s->old_json[0] = s->new_json[0] = '\0';
  if (s->had_old) value_json(change->old_value, s->old_json, sizeof s->old_json);
  if (s->had_new) value_json(change->new_value, s->new_json, sizeof s->new_json);
  s->state_id = change->state.id;
  s->binding_id = change->binding.id;
  s->revision = change->revision;
  s->had_transaction = change->transaction != NULL;
  s->thread = pthread_self();
  pthread_mutex_unlock(&s->mu);
}

static void seen_destroy(void *user_data) {
  seen_t *s = user_data;
  pthread_mutex_lock(&s->mu);
  s->destroyed++;
  pthread_mutex_unlock(&s->mu);
}

/* A consistent copy, to check fields without holding the lock. */
static seen_t seen_snapshot(seen_t *s) {
  seen_t copy;
  pthread_mutex_lock(&s->mu);
  copy = *s;
  pthread_mutex_unlock(&s->mu);
  return copy;
}

static int seen_calls(seen_t *s) { return seen_snapshot(s).calls; }
static int seen_destroyed(seen_t *s) { return seen_snapshot(s).destroyed; }

/* The JSON text `got` (as recorded) is structurally equal to `want`: member
 * order does not matter, as in tether_value_equal. */
static void check_json_text_(const char *got, const char *want, const char *gexpr,
                             const char *file, int line) {
  tether_value_t *v = NULL;
  if (got[0] == '\0' || tether_value_from_json(got, -1, &v) != TETHER_OK) {
    check_fail_(file, line, "%s: \"%s\" is not the JSON of a value (expected %s)", gexpr, got,
                want);
    return;
  }
  check_value_json_(v, want, gexpr, file, line);
  tether_value_free(v);
}
#define CHECK_JSON(got, want) check_json_text_((got), (want), #got, __FILE__, __LINE__)

static uint64_t revision_of(tether_runtime_t rt) {
  uint64_t r = 0;
  CHECK_OK(tether_runtime_revision(rt, &r));
  return r;
}

/* ---- the child: an editor that only holds bindings ------------------------ */

/* RecipeEditor's @Binding properties. The editor can read and write these
 * parts of the parent's config and nothing else; it never learns the state. */
typedef struct recipe_editor {
  tether_binding_t recipe;       /* the whole config ("" projection) */
  tether_binding_t title;        /* $config.title */
  tether_binding_t servings;     /* $config.servings */
  tether_binding_t vegetarian;   /* $config.vegetarian */
  tether_binding_t ingredients;  /* $config.ingredients */
  tether_binding_t second;       /* $config.ingredients[1] */
  tether_binding_t second_grams; /* $config.ingredients[1].grams */
} recipe_editor_t;

/* The parent hands in $config; the editor narrows it to what it edits.
 * Projections chain: each one appends its step to the path of the one it was
 * made from, so second_grams names "/ingredients/1/grams". */
static int editor_open(recipe_editor_t *ed, tether_binding_t config) {
  int rc;
  memset(ed, 0, sizeof *ed);
  if ((rc = tether_binding_project(config, "", &ed->recipe)) != TETHER_OK) return rc;
  if ((rc = tether_binding_project(config, "/title", &ed->title)) != TETHER_OK) return rc;
  if ((rc = tether_binding_project(config, "/servings", &ed->servings)) != TETHER_OK) return rc;
  if ((rc = tether_binding_project(config, "/vegetarian", &ed->vegetarian)) != TETHER_OK)
    return rc;
  if ((rc = tether_binding_project(config, "/ingredients", &ed->ingredients)) != TETHER_OK)
    return rc;
  /* tether_binding_index, not the pointer "/1": it insists on an array. */
  if ((rc = tether_binding_index(ed->ingredients, 1, &ed->second)) != TETHER_OK) return rc;
  return tether_binding_project(ed->second, "/grams", &ed->second_grams);
}

/* The editor's actions: each one is a plain write through a binding. */
static int editor_rename(recipe_editor_t *ed, const char *title) {
  return tether_binding_set_string(ed->title, title, -1);
}

static int editor_set_servings(recipe_editor_t *ed, int64_t servings) {
  return tether_binding_set_int(ed->servings, servings);
}

static int editor_set_second_grams(recipe_editor_t *ed, int64_t grams) {
  return tether_binding_set_int(ed->second_grams, grams);
}

static int editor_toggle_vegetarian(recipe_editor_t *ed) {
  bool veg = false;
  int rc = tether_binding_get_bool(ed->vegetarian, &veg);
  if (rc != TETHER_OK) return rc;
  return tether_binding_set_bool(ed->vegetarian, !veg);
}

/* The editor goes away: it frees its bindings (never the state: a binding
 * does not own its source). */
static void editor_close(recipe_editor_t *ed) {
  CHECK_OK(tether_binding_free(ed->second_grams));
  CHECK_OK(tether_binding_free(ed->second));
  CHECK_OK(tether_binding_free(ed->ingredients));
  CHECK_OK(tether_binding_free(ed->vegetarian));
  CHECK_OK(tether_binding_free(ed->servings));
  CHECK_OK(tether_binding_free(ed->title));
  CHECK_OK(tether_binding_free(ed->recipe));
}

/* ------------------------------------------------------------------------- */

/* Registered in cases.h: the whole story of the lesson of the same name,
 * with every check it made when it was the lesson itself. */
TEST_CASE(scenario_recipe_editor) {
  tether_runtime_t rt;
  tether_state_t config;
  tether_binding_t cfg, fourth;
  tether_observer_t obs;
  recipe_editor_t ed;
  seen_t whole, title, servings, flour, milk, list_loop; /* the parent's */
  seen_t grams_watch, second_watch, title_watch;         /* on bindings */
  seen_t snap;
  tether_value_t *v = NULL;
  uint64_t rev;
  int64_t n = 0;
  bool veg = false;
  char buf[256];
  pthread_t main_thread = pthread_self();

  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return check_report("recipe_editor");

  /* --- the parent: @State var config --------------------------------------- */
  CHECK_OK(tether_state_new_json(rt,
                                 "{\"title\":\"Pancakes\",\"servings\":4,"
                                 "\"ingredients\":[{\"name\":\"flour\",\"grams\":200},"
                                 "{\"name\":\"milk\",\"grams\":300},"
                                 "{\"name\":\"egg\",\"grams\":50}],"
                                 "\"vegetarian\":true}",
                                 -1, 0, &config));

  /* The parent's own views, observing parts of its state. SYNC observers have
   * run when the write that woke them returns, so the checks below need no
   * waiting; the loop observer ("the shopping list") needs a flush. */
  seen_init(&whole);
  seen_init(&title);
  seen_init(&servings);
  seen_init(&flour);
  seen_init(&milk);
  seen_init(&list_loop);
  CHECK_OK(tether_observe(config, NULL, TETHER_OBSERVE_SYNC, seen_record, &whole, seen_destroy,
                          &obs));
  CHECK_OK(tether_observe(config, "/title", TETHER_OBSERVE_SYNC, seen_record, &title,
                          seen_destroy, &obs));
  CHECK_OK(tether_observe(config, "/servings", TETHER_OBSERVE_SYNC, seen_record, &servings,
                          seen_destroy, &obs));
  CHECK_OK(tether_observe(config, "/ingredients/0/grams", TETHER_OBSERVE_SYNC, seen_record,
                          &flour, seen_destroy, &obs));
  CHECK_OK(tether_observe(config, "/ingredients/1/grams", TETHER_OBSERVE_SYNC, seen_record,
                          &milk, seen_destroy, &obs));
  CHECK_OK(tether_observe(config, "/ingredients", 0, seen_record, &list_loop, seen_destroy, &obs));

  /* --- 1. $config, handed to the child ------------------------------------ */
  /* $config is a binding of the whole state. The editor narrows it; after
   * that the parent can drop its own handle: projections of a state binding
   * name the state directly and keep working. */
  CHECK_OK(tether_state_binding(config, &cfg));
  CHECK_OK(editor_open(&ed, cfg));
  CHECK_OK(tether_binding_free(cfg));
  CHECK_ERR(tether_binding_get(cfg, &v), TETHER_ESTALE); /* that handle is gone */

  /* The editor reads its parts. */
  CHECK_OK(tether_binding_get_string(ed.title, buf, sizeof buf, NULL));
  CHECK_STR_EQ(buf, "Pancakes");
  CHECK_OK(tether_binding_get_int(ed.servings, &n));
  CHECK_INT_EQ(n, 4);
  CHECK_OK(tether_binding_get_int(ed.second_grams, &n));
  CHECK_INT_EQ(n, 300);
  CHECK_OK(tether_binding_get_bool(ed.vegetarian, &veg));
  CHECK(veg);
  if (CHECK_OK(tether_binding_get(ed.second, &v))) {
    CHECK_VALUE(v, "{\"name\":\"milk\",\"grams\":300}");
    tether_value_free(v);
    v = NULL;
  }
  if (CHECK_OK(tether_binding_get(ed.recipe, &v))) { /* "": the whole value */
    tether_value_t *name = NULL;
    if (CHECK_OK(tether_value_get_path(v, "/ingredients/2/name", &name))) {
      CHECK_VALUE(name, "\"egg\"");
      tether_value_free(name);
    }
    tether_value_free(v);
    v = NULL;
  }

  /* --- 2. the child renames: the parent sees it ---------------------------- */
  rev = revision_of(rt);
  CHECK_OK(editor_rename(&ed, "Crepes"));
  CHECK_INT_EQ(revision_of(rt), rev + 1); /* one changing write, one commit */
  /* No flush: these are SYNC observers, already called. */
  snap = seen_snapshot(&title);
  CHECK_INT_EQ(snap.calls, 1);
  CHECK_STR_EQ(snap.path, "/title");
  CHECK_STR_EQ(snap.old_json, "\"Pancakes\"");
  CHECK_STR_EQ(snap.new_json, "\"Crepes\"");
  CHECK_INT_EQ(snap.state_id, config.id);
  CHECK_INT_EQ(snap.binding_id, 0);    /* observed through the state, not a binding */
  CHECK_INT_EQ(snap.revision, rev + 1);
  CHECK_INT_EQ(snap.had_transaction, 0); /* written outside any transaction */
  CHECK(pthread_equal(snap.thread, main_thread)); /* SYNC: on the writing thread */
  /* The whole-value observer is an ancestor of "/title": woken. */
  snap = seen_snapshot(&whole);
  CHECK_INT_EQ(snap.calls, 1);
  CHECK_STR_EQ(snap.path, "");
  CHECK_JSON(snap.new_json,
             "{\"title\":\"Crepes\",\"servings\":4,"
             "\"ingredients\":[{\"name\":\"flour\",\"grams\":200},"
             "{\"name\":\"milk\",\"grams\":300},{\"name\":\"egg\",\"grams\":50}],"
             "\"vegetarian\":true}");
  CHECK_JSON(snap.old_json,
             "{\"title\":\"Pancakes\",\"servings\":4,"
             "\"ingredients\":[{\"name\":\"flour\",\"grams\":200},"
             "{\"name\":\"milk\",\"grams\":300},{\"name\":\"egg\",\"grams\":50}],"
             "\"vegetarian\":true}");
  /* Siblings are never woken. */
  CHECK_INT_EQ(seen_calls(&servings), 0);
  CHECK_INT_EQ(seen_calls(&flour), 0);
  CHECK_INT_EQ(seen_calls(&milk), 0);
  /* The parent reads the new title straight from its state. */
  if (CHECK_OK(tether_state_get_path(config, "/title", &v))) {
    CHECK_VALUE(v, "\"Crepes\"");
    tether_value_free(v);
    v = NULL;
  }
  /* The loop observer of "/ingredients" is a sibling too: after a flush it
   * still has not been called. */
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(seen_calls(&list_loop), 0);

  /* --- 3. servings -------------------------------------------------------- */
  CHECK_OK(editor_set_servings(&ed, 6));
  snap = seen_snapshot(&servings);
  CHECK_INT_EQ(snap.calls, 1);
  CHECK_STR_EQ(snap.path, "/servings");
  CHECK_STR_EQ(snap.old_json, "4");
  CHECK_STR_EQ(snap.new_json, "6");
  CHECK_INT_EQ(seen_calls(&whole), 2);
  CHECK_INT_EQ(seen_calls(&title), 1); /* a sibling now */

  /* --- 4. a chained projection: $config.ingredients[1].grams --------------- */
  CHECK_OK(editor_set_second_grams(&ed, 250));
  snap = seen_snapshot(&milk);
  CHECK_INT_EQ(snap.calls, 1);
  CHECK_STR_EQ(snap.path, "/ingredients/1/grams");
  CHECK_STR_EQ(snap.old_json, "300");
  CHECK_STR_EQ(snap.new_json, "250");
  CHECK_INT_EQ(seen_calls(&flour), 0); /* element 0 is a sibling of element 1 */
  CHECK_INT_EQ(seen_calls(&whole), 3);
  CHECK_INT_EQ(seen_calls(&title), 1);
  CHECK_INT_EQ(seen_calls(&servings), 1);
  /* The loop observer of the list (an ancestor) gets its call on the loop
   * thread; flush waits for it. */
  CHECK_OK(tether_runtime_flush(rt));
  snap = seen_snapshot(&list_loop);
  CHECK_INT_EQ(snap.calls, 1);
  CHECK_STR_EQ(snap.path, "/ingredients");
  CHECK_JSON(snap.new_json,
             "[{\"name\":\"flour\",\"grams\":200},{\"name\":\"milk\",\"grams\":250},"
             "{\"name\":\"egg\",\"grams\":50}]");
  CHECK_INT_EQ(snap.state_id, config.id);
  CHECK(!pthread_equal(snap.thread, main_thread)); /* the runtime's loop thread */

  /* A toggle reads through the binding, then writes through it. */
  CHECK_OK(editor_toggle_vegetarian(&ed));
  CHECK_OK(tether_state_get_path(config, "/vegetarian", &v));
  CHECK_VALUE(v, "false");
  tether_value_free(v);
  v = NULL;
  CHECK_INT_EQ(seen_calls(&whole), 4);

  /* An equal write changes nothing: no revision, no observer. */
  rev = revision_of(rt);
  CHECK_OK(editor_set_servings(&ed, 6));
  CHECK_INT_EQ(revision_of(rt), rev);
  CHECK_INT_EQ(seen_calls(&servings), 1);
  CHECK_INT_EQ(seen_calls(&whole), 4);

  /* --- 5. observing through a binding -------------------------------------- */
  /* The editor watches its own parts. For a binding onto a state, the change
   * names the binding, the state behind it, and the FULL path in the state. */
  seen_init(&grams_watch);
  seen_init(&second_watch);
  seen_init(&title_watch);
  CHECK_OK(tether_binding_observe(ed.second_grams, NULL, TETHER_OBSERVE_SYNC, seen_record,
                                  &grams_watch, seen_destroy, &obs));
  /* A pointer given to tether_binding_observe is relative to the binding. */
  CHECK_OK(tether_binding_observe(ed.second, "/grams", TETHER_OBSERVE_SYNC, seen_record,
                                  &second_watch, seen_destroy, &obs));
  CHECK_OK(tether_binding_observe(ed.title, NULL, TETHER_OBSERVE_SYNC, seen_record, &title_watch,
                                  seen_destroy, &obs));

  /* The parent writes its state directly; the editor's observers hear it. */
  rev = revision_of(rt);
  CHECK_OK(tether_state_set_path_json(config, "/ingredients/1/grams", "275", -1));
  snap = seen_snapshot(&grams_watch);
  CHECK_INT_EQ(snap.calls, 1);
  CHECK_INT_EQ(snap.binding_id, ed.second_grams.id);
  CHECK_INT_EQ(snap.state_id, config.id);
  CHECK_STR_EQ(snap.path, "/ingredients/1/grams");
  CHECK_STR_EQ(snap.old_json, "250");
  CHECK_STR_EQ(snap.new_json, "275");
  CHECK_INT_EQ(snap.revision, rev + 1);
  snap = seen_snapshot(&second_watch);
  CHECK_INT_EQ(snap.calls, 1);
  CHECK_INT_EQ(snap.binding_id, ed.second.id);
  CHECK_INT_EQ(snap.state_id, config.id);
  CHECK_STR_EQ(snap.path, "/ingredients/1/grams");
  CHECK_INT_EQ(seen_calls(&title_watch), 0); /* a sibling */
  CHECK_OK(tether_binding_get_int(ed.second_grams, &n));
  CHECK_INT_EQ(n, 275);

  /* The editor writes; its own binding observer and the parent's both hear. */
  CHECK_OK(editor_rename(&ed, "Crepes Suzette"));
  snap = seen_snapshot(&title_watch);
  CHECK_INT_EQ(snap.calls, 1);
  CHECK_INT_EQ(snap.binding_id, ed.title.id);
  CHECK_STR_EQ(snap.path, "/title");
  CHECK_STR_EQ(snap.new_json, "\"Crepes Suzette\"");
  CHECK_INT_EQ(seen_calls(&title), 2);
  CHECK_INT_EQ(seen_calls(&grams_watch), 1);

  /* --- 6. an index past the end ------------------------------------------- */
  /* Making the projection succeeds: the path is checked at each use. */
  CHECK_OK(tether_binding_index(ed.ingredients, 3, &fourth));
  CHECK_ERR(tether_binding_get(fourth, &v), TETHER_ERANGE);
  /* An index projection never appends, not even at index == length. */
  rev = revision_of(rt);
  CHECK_ERR(tether_binding_set_json(fourth, "{\"name\":\"sugar\",\"grams\":20}", -1),
            TETHER_ERANGE);
  CHECK_INT_EQ(revision_of(rt), rev); /* nothing changed */
  CHECK_INT_EQ(seen_calls(&whole), 6);
  if (CHECK_OK(tether_state_get_path(config, "/ingredients", &v))) {
    size_t len = 0;
    CHECK_OK(tether_value_length(v, &len));
    CHECK_INT_EQ(len, 3);
    tether_value_free(v);
    v = NULL;
  }

  /* --- 7. the parent changes the value's shape ------------------------------ */
  /* An old file format: no servings, no vegetarian flag, ingredients as free
   * text. The editor's bindings still exist; each use finds what is there. */
  CHECK_OK(tether_state_set_json(config, "{\"title\":\"Toast\",\"ingredients\":\"bread, butter\"}",
                                 -1));
  CHECK_OK(tether_binding_get_string(ed.title, buf, sizeof buf, NULL));
  CHECK_STR_EQ(buf, "Toast");
  CHECK_ERR(tether_binding_get_int(ed.servings, &n), TETHER_ENOTFOUND); /* member gone */
  CHECK_ERR(tether_binding_get_bool(ed.vegetarian, &veg), TETHER_ENOTFOUND);
  /* "[1]" on a string: an index step needs an array. */
  CHECK_ERR(tether_binding_get(ed.second, &v), TETHER_ETYPE);
  CHECK_ERR(tether_binding_get_int(ed.second_grams, &n), TETHER_ETYPE);
  /* The editor's observer of grams was told its part disappeared. */
  snap = seen_snapshot(&grams_watch);
  CHECK_INT_EQ(snap.calls, 2);
  CHECK_INT_EQ(snap.had_old, 1);
  CHECK_STR_EQ(snap.old_json, "275");
  CHECK_INT_EQ(snap.had_new, 0); /* new_value NULL: the path names nothing now */
  snap = seen_snapshot(&servings);
  CHECK_INT_EQ(snap.calls, 2);
  CHECK_INT_EQ(snap.had_new, 0);
  /* Writes: a projected member that is missing is created (JSON Patch "add"),
   * a step through a string still fails and changes nothing. */
  CHECK_OK(editor_set_servings(&ed, 2));
  rev = revision_of(rt);
  CHECK_ERR(editor_set_second_grams(&ed, 100), TETHER_ETYPE);
  CHECK_INT_EQ(revision_of(rt), rev);
  if (CHECK_OK(tether_state_get(config, &v))) {
    CHECK_VALUE(v, "{\"title\":\"Toast\",\"ingredients\":\"bread, butter\",\"servings\":2}");
    tether_value_free(v);
    v = NULL;
  }

  /* One ingredient: element 1 is past the end. */
  CHECK_OK(tether_state_set_json(config,
                                 "{\"title\":\"Toast\",\"servings\":2,"
                                 "\"ingredients\":[{\"name\":\"bread\"}],\"vegetarian\":true}",
                                 -1));
  CHECK_ERR(tether_binding_get(ed.second, &v), TETHER_ERANGE);
  CHECK_ERR(tether_binding_get_int(ed.second_grams, &n), TETHER_ERANGE);
  CHECK_ERR(editor_set_second_grams(&ed, 100), TETHER_ERANGE);
  CHECK_OK(tether_binding_get_bool(ed.vegetarian, &veg));
  CHECK(veg);

  /* Two ingredients without weights: "grams" is missing; writing adds it. */
  CHECK_OK(tether_state_set_path_json(config, "/ingredients/-", "{\"name\":\"butter\"}", -1));
  CHECK_ERR(tether_binding_get_int(ed.second_grams, &n), TETHER_ENOTFOUND);
  CHECK_OK(editor_set_second_grams(&ed, 20));
  if (CHECK_OK(tether_state_get_path(config, "/ingredients/1", &v))) {
    CHECK_VALUE(v, "{\"name\":\"butter\",\"grams\":20}");
    tether_value_free(v);
    v = NULL;
  }
  snap = seen_snapshot(&grams_watch); /* it reappeared: woken again */
  CHECK_INT_EQ(snap.had_new, 1);
  CHECK_STR_EQ(snap.new_json, "20");
  CHECK_INT_EQ(seen_calls(&flour), 1); /* only the first replacement dropped it */

  CHECK_OK(tether_binding_get_json(ed.recipe, 0, buf, sizeof buf, NULL));
  printf("recipe_editor: the parent's config is now %s\n", buf);

  /* --- 8. the parent frees the state ---------------------------------------- */
  CHECK_OK(tether_runtime_flush(rt)); /* deliver the loop observer first */
  CHECK_OK(tether_state_free(config));
  /* Every observer on it ended, those made through bindings too: each
   * destroy function ran exactly once. */
  CHECK_INT_EQ(seen_destroyed(&whole), 1);
  CHECK_INT_EQ(seen_destroyed(&title), 1);
  CHECK_INT_EQ(seen_destroyed(&servings), 1);
  CHECK_INT_EQ(seen_destroyed(&flour), 1);
  CHECK_INT_EQ(seen_destroyed(&milk), 1);
  CHECK_INT_EQ(seen_destroyed(&list_loop), 1);
  CHECK_INT_EQ(seen_destroyed(&grams_watch), 1);
  CHECK_INT_EQ(seen_destroyed(&second_watch), 1);
  CHECK_INT_EQ(seen_destroyed(&title_watch), 1);
  /* The bindings outlive their source but can no longer reach it. */
  CHECK_ERR(tether_binding_get_string(ed.title, buf, sizeof buf, NULL), TETHER_ESTALE);
  CHECK_ERR(tether_binding_get_int(ed.servings, &n), TETHER_ESTALE);
  CHECK_ERR(tether_binding_get_int(ed.second_grams, &n), TETHER_ESTALE);
  CHECK_ERR(tether_binding_get(ed.recipe, &v), TETHER_ESTALE);
  CHECK_ERR(tether_binding_get(fourth, &v), TETHER_ESTALE);
  CHECK_ERR(editor_rename(&ed, "Ghost"), TETHER_ESTALE);
  CHECK_ERR(editor_toggle_vegetarian(&ed), TETHER_ESTALE);
  CHECK_ERR(tether_binding_observe(ed.title, NULL, 0, seen_record, &title_watch, seen_destroy,
                                   &obs),
            TETHER_ESTALE);
  CHECK_INT_EQ(seen_destroyed(&title_watch), 1); /* on error destroy is not called */
  /* Freeing a state does not free bindings to it: their owner does. */
  editor_close(&ed);
  CHECK_OK(tether_binding_free(fourth));
  CHECK_ERR(tether_binding_free(fourth), TETHER_ESTALE); /* a second free is harmless */

  CHECK_OK(tether_runtime_free(rt));
  return check_report("recipe_editor");
}
