/*
 * settings_panel.c — transactions and descriptors: several settings
 * committed at once under one revision (withTransaction), and states that
 * refuse bad writes for every writer (a range, a validator, read-only).
 *
 * If any write of a transaction is refused, the commit applies nothing.
 */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "tether.h"

/* Accepts only themes it knows; says why otherwise. */
static bool valid_theme(tether_state_t s, const tether_value_t *proposed, const tether_transaction_info_t *txn,
                        char *reason, size_t size, void *user_data) {
  char name[32] = "";
  (void)s;
  (void)txn;
  (void)user_data;
  tether_value_get_string(proposed, name, sizeof name, NULL);
  if (strcmp(name, "light") == 0 || strcmp(name, "dark") == 0) return true;
  snprintf(reason, size, "unknown theme \"%s\"", name);
  return false;
}

int main(void) {
  tether_runtime_t rt;
  tether_state_t volume, theme;
  tether_state_descriptor_t d;
  tether_transaction_t txn;
  tether_transaction_info_t info = {"apply", 0, NULL};
  uint64_t rev = 0, vrev = 0, trev = 0;
  int64_t v = 0;

  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return check_report("settings_panel");
  CHECK_OK(tether_state_new_int(rt, 50, TETHER_STATE_LOCK_TYPE, &volume));
  CHECK_OK(tether_state_new_string(rt, "light", -1, 0, &theme));

  tether_state_descriptor_init(&d);
  d.flags = TETHER_DESCRIBE_RANGE;
  d.min = 0;
  d.max = 100;
  d.name = "volume";
  CHECK_OK(tether_state_describe(volume, &d));
  tether_state_descriptor_init(&d);
  d.validate = valid_theme;
  CHECK_OK(tether_state_describe(theme, &d));

  /* Both settings at once, under one revision. */
  CHECK_OK(tether_transaction_begin(rt, &info, &txn));
  CHECK_OK(tether_state_set_int(volume, 80));
  CHECK_OK(tether_state_set_string(theme, "dark", -1));
  CHECK_OK(tether_transaction_commit(txn, &rev));
  CHECK_OK(tether_state_revision(volume, &vrev));
  CHECK_OK(tether_state_revision(theme, &trev));
  CHECK(vrev == rev && trev == rev);

  /* Validators run at commit: one refusal and the commit applies nothing. */
  CHECK_OK(tether_transaction_begin(rt, &info, &txn));
  CHECK_OK(tether_state_set_int(volume, 90));
  CHECK_OK(tether_state_set_string(theme, "neon", -1)); /* staged */
  CHECK_ERR(tether_transaction_commit(txn, NULL), TETHER_EREJECTED);
  printf("settings_panel: refused: %s\n", tether_last_error());
  CHECK_OK(tether_state_get_int(volume, &v));
  CHECK_INT_EQ(v, 80);

  /* The range and the type lock hold for plain writes too. */
  CHECK_ERR(tether_state_set_int(volume, 101), TETHER_ERANGE);
  CHECK_ERR(tether_state_set_string(volume, "loud", -1), TETHER_ETYPE);

  /* Read-only: no writer may change it any more. */
  tether_state_descriptor_init(&d);
  d.flags = TETHER_DESCRIBE_READ_ONLY;
  CHECK_OK(tether_state_describe(volume, &d));
  CHECK_ERR(tether_state_set_int(volume, 10), TETHER_EREADONLY);

  CHECK_OK(tether_runtime_free(rt));
  return check_report("settings_panel");
}
