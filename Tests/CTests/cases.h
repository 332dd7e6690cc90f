/*
 * cases.h — the registry of Tether's C test cases (libuv's test/test-list.h
 * is the model).
 *
 * Every case is a function `int tcase_<name>(void)` defined with TEST_CASE
 * in one of the suite files beside this header (the name starts with the
 * suite's file name); it makes what it needs (its own runtime), runs its
 * checks, and returns check_report(): 0 when every check passed. No case
 * depends on another having run. The runner (runner.c) runs one case per
 * process, by name, so the harness (run.sh) reports each case and a crash
 * in one takes no other down:
 *
 *     tether-tests --list
 *     tether-tests computed_diamond
 *     make test CASE=computed_diamond
 *
 * A new case: define it with TEST_CASE in its suite, add its name here.
 */
#ifndef TETHER_TESTS_CASES_H
#define TETHER_TESTS_CASES_H

#define TEST_CASE(name) int tcase_##name(void)

#define TETHER_TEST_CASES(X) \
  X(remote_bad_input) \
  X(remote_callbacks) \
  X(remote_threads) \
  X(remote_bindings_and_computeds) \
  X(remote_untrusted) \
  X(remote_timeout) \
  X(bad_input_error_strings) \
  X(bad_input_value_constructors) \
  X(bad_input_value_readers) \
  X(bad_input_bad_json) \
  X(bad_input_to_json) \
  X(bad_input_pointers) \
  X(bad_input_runtime_options) \
  X(bad_input_runtime_calls) \
  X(bad_input_state_args) \
  X(bad_input_type_lock) \
  X(bad_input_state_paths) \
  X(bad_input_nan_state) \
  X(bad_input_handles) \
  X(bad_input_observer_args) \
  X(bad_input_after_runtime_free) \
  X(bindings_state_binding) \
  X(bindings_projection) \
  X(bindings_index) \
  X(bindings_constant) \
  X(bindings_custom) \
  X(bindings_custom_frees_itself) \
  X(bindings_null_out) \
  X(bindings_stale) \
  X(bindings_observers) \
  X(bindings_callbacks_inside_sync) \
  X(bindings_callbacks_inside_loop) \
  X(bindings_bind) \
  X(bindings_runtime_teardown) \
  X(callbacks_writes_from_callbacks) \
  X(callbacks_feedback_loop_10_loop) \
  X(callbacks_feedback_loop_10_sync) \
  X(callbacks_feedback_loop_0_loop) \
  X(callbacks_removing_observers_loop) \
  X(callbacks_removing_observers_sync) \
  X(callbacks_freeing_the_state_loop) \
  X(callbacks_freeing_the_state_sync) \
  X(callbacks_freeing_the_runtime_loop) \
  X(callbacks_freeing_the_runtime_sync) \
  X(callbacks_freeing_with_live_observers) \
  X(callbacks_flush_inside) \
  X(computed_value_setters) \
  X(computed_lazy_and_cached) \
  X(computed_diamond) \
  X(computed_equality_cutoff) \
  X(computed_dynamic_dependencies) \
  X(computed_cycles) \
  X(computed_cached_errors) \
  X(computed_untracked) \
  X(computed_observing) \
  X(computed_reading_paths) \
  X(computed_chains) \
  X(computed_freed_states) \
  X(computed_freeing_computeds) \
  X(computed_runtime_free_with_computeds) \
  X(computed_bad_input) \
  X(effects_first_run) \
  X(effects_reruns) \
  X(effects_once_per_write_or_batch) \
  X(effects_changed_back_in_batch) \
  X(effects_cleanup_order_sync) \
  X(effects_cleanup_order_loop) \
  X(effects_free_from_own_run_sync) \
  X(effects_free_from_own_run_loop) \
  X(effects_free_from_cleanup_sync) \
  X(effects_free_from_cleanup_loop) \
  X(effects_free_inside_batch_sync) \
  X(effects_free_inside_batch_loop) \
  X(effects_self_waking_sync) \
  X(effects_self_waking_loop) \
  X(effects_ping_pong_sync) \
  X(effects_ping_pong_loop) \
  X(effects_chain_sync) \
  X(effects_chain_loop) \
  X(effects_computed_switch) \
  X(effects_untracked_in_effect) \
  X(effects_runtime_free_with_effects) \
  X(effects_bad_input) \
  X(free_in_callbacks_free_during_computed_read) \
  X(free_in_callbacks_free_during_effect_creation) \
  X(free_in_callbacks_free_during_write) \
  X(scopes_owns) \
  X(scopes_nested) \
  X(scopes_enter_leave) \
  X(scopes_free_from_callback_sync) \
  X(scopes_free_from_callback_loop) \
  X(scopes_threads) \
  X(scopes_free_while_entered) \
  X(scopes_runtime_teardown) \
  X(single_thread_bad_options) \
  X(single_thread_host_mode) \
  X(single_thread_external_mode) \
  X(single_thread_errors_stay_precise) \
  X(tracking_fires_once_loop) \
  X(tracking_fires_once_sync) \
  X(tracking_cancel_before_change_loop) \
  X(tracking_cancel_before_change_sync) \
  X(tracking_cancel_while_owed) \
  X(tracking_batches_loop) \
  X(tracking_batches_sync) \
  X(tracking_through_a_computed) \
  X(tracking_rearming_loop) \
  X(tracking_rearming_sync) \
  X(tracking_change_during_apply_loop) \
  X(tracking_change_during_apply_sync) \
  X(tracking_runtime_free_with_tracking) \
  X(tracking_bad_input) \
  X(transactions_commit) \
  X(transactions_abort) \
  X(transactions_nested) \
  X(transactions_threads_and_errors) \
  X(transactions_metadata) \
  X(transactions_doomed) \
  X(transactions_replay) \
  X(transactions_concurrent) \
  X(graph_workloads_references) \
  X(graph_workloads_kairo) \
  X(graph_workloads_cellx) \
  X(graph_workloads_sbench) \
  X(graph_workloads_dynamic) \
  X(graph_workloads_shared_runtime) \
  X(graph_workloads_full) \
  X(threads_derived_writers_and_reader) \
  X(threads_derived_outside_read_waits) \
  X(scenario_counter) \
  X(scenario_profile) \
  X(scenario_shop) \
  X(scenario_recipe_editor) \
  X(scenario_picker_hooks) \
  X(scenario_settings_panel) \
  X(scenario_temperature) \
  X(scenario_host_loop) \
  X(scenario_threads) \
  X(sync_contention_calls_chain) \
  X(sync_direct_write_to_the_same_state) \
  X(sync_direct_write_to_another_state) \
  X(sync_direct_equal_write_inside) \
  X(sync_direct_remove_and_register_inside) \
  X(sync_direct_free_runtime_inside) \
  X(sync_direct_not_used_in_batches) \
  X(sync_direct_remove_pinned_destroys_at_once) \
  X(sync_direct_remove_self_destroys_after_call) \
  X(sync_direct_remove_from_another_thread) \
  X(sync_direct_write_from_another_thread) \
  X(sync_direct_free_runtime_from_another_thread) \
  X(sync_direct_nested_too_deep_skips_the_call) \
  X(sync_direct_threads_chain_per_observer) \
  X(sync_direct_races_removals_during_fan_outs) \
  X(sync_direct_races_removals_symmetric_fences) \
  X(deep_chains_stale_chain_pulled_from_the_far_end) \
  X(deep_chains_fresh_chain_read_from_the_far_end) \
  X(batches_stale_and_forged_runtime_handles) \
  X(batches_single_threaded_runtime) \
  X(batches_from_several_threads) \
  X(plain_path_forged_and_stale_handles) \
  X(plain_path_other_types) \
  X(plain_path_reads_in_compute_callbacks) \
  X(plain_path_writes_to_watched_states) \
  X(plain_path_double_writes) \
  X(plain_path_double_writers_race) \
  X(plain_path_bool_writes_and_reads) \
  X(plain_path_transactions_and_threads) \
  X(plain_path_readers_race_a_writer) \
  X(plain_path_value_reads_of_every_type) \
  X(plain_path_computed_doubles) \
  X(computed_custom_equality) \
  X(effects_on_cleanup) \
  X(effects_fallible) \
  X(effects_fallible_last_error_across_threads) \
  X(effects_nested_ownership) \
  X(path_tracking_siblings_and_ancestors) \
  X(path_tracking_cutoff) \
  X(path_tracking_effects) \
  X(path_tracking_missing_paths) \
  X(path_tracking_arrays) \
  X(path_tracking_several_paths) \
  X(path_tracking_dynamic) \
  X(path_tracking_transactions) \
  X(path_tracking_bindings) \
  X(path_tracking_freed_state) \
  X(path_tracking_bad_input) \
  X(values_object_set_replaces_in_place) \
  X(values_object_set_large_objects) \
  X(values_object_set_copies_do_not_share) \
  X(values_object_set_errors_leave_it_unchanged) \
  X(typed_paths_state_reads) \
  X(typed_paths_state_tracking_and_transactions) \
  X(typed_paths_computed_reads) \
  X(graph_dot_bad_input) \
  X(graph_dot_nodes_edges_and_marks) \
  X(graph_dot_inside_callbacks) \
  X(graph_dot_threads) \
  X(graph_dot_hostile_names) \
  X(trace_bad_input) \
  X(trace_why_it_ran) \
  X(trace_marked_and_destroy) \
  X(trace_callback_frees_the_reader) \
  X(trace_default_line) \
  /* end of the list */

#endif
