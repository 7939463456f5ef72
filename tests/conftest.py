"""Shared fixtures: real databases, real data, a real browser, each skipped with a reason when absent."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

# A suite started in the background of a shell without job control (`make test &`, `nohup`, some CI runners)
# inherits SIGINT ignored, and so does every process it starts: the tests that stop a real ioweather process with
# Ctrl-C then see it run on (rightly: an ignored SIGINT is the user's choice). They test ioweather, not the
# launcher: Python's own Ctrl-C handler here, which exec() turns back into the default for every child.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

from browser import CHROMIUM_ARGS, launch  # noqa: F401  (CHROMIUM_ARGS: test_fsstats_cli imports it from here)

# The developers' machines set PYTHONDONTWRITEBYTECODE=1, with which pytest rewrites the asserts of every
# test module again in every process of every run (and Python compiles every module of src/ again): 7.7 s of
# the 12.4 s of CPU each xdist worker spent collecting the fast tier. The test run keeps them as pytest does
# by default, in the __pycache__ directories (.gitignore) of tests/ and src/; the commands a test starts
# (`python -m ioweather`) run with the environment as it is, and read src/'s, compiled once per run
# (`pytest_configure`: ~0.05 s of CPU less for each of the fast tier's ~170 such processes).
sys.dont_write_bytecode = False

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
TESTDATA = SHARED / "testdata"
DATA = SHARED / "data"

PG_ADMIN_URL = os.environ.get("IOWEATHER_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres")
MARIADB_ADMIN_URL = os.environ.get("IOWEATHER_TEST_MARIADB", "mysql://root@127.0.0.1:3306/test")


#: The tiers (docs/architecture.md, "Test tiers"). A test that asks for one of these fixtures needs that
#: real component, wherever it sits.
FIXTURE_MARKERS = {
    "browser": ("browser",),
    "chromium_path": ("browser",),
    "pg_url": ("postgres",),
    "mariadb_url": ("mariadb",),
    "slurm_cluster": ("slurm",),
}

#: Modules whose tests are slow as a whole, measured with `pytest --durations=0 -p no:randomly` on this
#: 2-core machine: they start servers, daemons, browsers or many `python -m ioweather` processes.
#: The marks live here so the test files need not change; a module's own `pytestmark` still counts.
MODULE_MARKERS: dict[str, tuple[str, ...]] = {
    "test_soak.py": ("soak", "slow"),
    "test_fuzz_darshan_scan.py": ("fuzz",),
    "test_fuzz_importers.py": ("fuzz",),
    "test_fuzz_snapshots.py": ("fuzz",),
    "test_fuzz_web.py": ("fuzz", "slow"),
    "test_slurm_import.py": ("slurm",),
    "test_bench_slurm.py": ("slurm", "slow"),
    "test_capacity_forecast.py": ("slow",),
    "test_center_mix.py": ("slow", "browser"),
    "test_bench.py": ("slow",),
    "test_distributed.py": ("slow",),
    "test_distributed_fsstats.py": ("slow",),
    "test_distributed_workload.py": ("slow",),
    "test_events.py": ("slow",),
    "test_exporter.py": ("slow",),
    "test_exporter_updates.py": ("slow",),
    "test_fsstats_diff_refs.py": ("slow",),
    "test_job_weather.py": ("slow",),
    "test_job_weather_batch.py": ("slow",),
    "test_metrics.py": ("slow",),
    "test_probe.py": ("slow",),
    "test_probe_cache_restart.py": ("slow",),
    "test_probe_cache_kept.py": ("slow",),
    "test_report_data.py": ("slow",),
    "test_servers_rollups.py": ("slow",),
    "test_store_check.py": ("slow",),
    "test_telemetry_failures.py": ("slow",),
    "test_web_contents.py": ("slow",),
    "test_web_fsview.py": ("slow",),
}

#: Single slow tests of modules that are otherwise fast, by function name (every parametrization): mostly
#: `python -m ioweather` processes, kills, hung files and servers. Every test of 1.5 s or more (setup, call and
#: teardown) in `pytest --fast --durations=0 --tb=line` on 2026-11-26 is here, which brought the fast tier from
#: 9 min 15 s to the time docs/architecture.md gives; test_smoke_commands.py keeps its own rule (one process
#: per command stays in the fast tier). Recomputed on 2026-11-28 from `pytest -n 2 --fast --durations=0` on a
#: machine shared by eight engineers: each duration scaled by 170 s / the run's sum of durations (170 s: the
#: same tests' sum with the machine to itself), a module fixture's setup left out (paid once per module).
SLOW_TESTS: dict[str, tuple[str, ...]] = {
    # servers and imports, twice each (a restart)
    "test_kept_answers.py": ("test_workload_after_a_restart_is_read_back_the_same", "test_store_prune_removes_them"),
    # the five-target store with archived days and pieces built twice: ~40 s at load 10
    "test_light_check.py": ("test_light_check_is_the_full_check", "test_the_answers_cover_every_state_and_a_learning_target",
                            "test_a_reference_period_and_thresholds",
                            "test_what_the_light_path_cannot_do_exactly_it_leaves",
                            "test_the_light_path_loads_neither_numpy_nor_sqlalchemy",
                            "test_a_v5_store_upgrades_and_its_hours_are_summarized_again",
                            "test_unsummarized_spans_empty_before_the_first_sample_or_the_last_hour"),
    "test_advisor_cli.py": (
        "test_html_report_has_the_combined_column",
        "test_json_io_time_and_saving_for_why",
        "test_text_report_shows_the_layer_and_the_combined_column",
    ),
    "test_advisor_lab.py": ("test_5_no_noise_on_the_public_logs",),
    # more than 2 s of CPU each in `IOWEATHER_TEST_CPU=DIR pytest -n 2 --fast` on 2026-11-29 (tests/cpu_times.py)
    "test_archive_columns.py": ("test_the_summary_of_planted_rows",),
    "test_lctl_capture_golden.py": ("test_every_capture_reads_as_before",),
    "test_imports_measured.py": ("test_why_on_a_sqlite_store_with_stored_facts_loads_no_heavy_library",),
    "test_job_diff.py": ("test_cli_json_table_and_errors", "test_stored_jobs_by_hash_prefix"),
    "test_job_lustre_files.py": ("test_the_public_logs_cover_what_the_reduction_must_get_right",),
    "test_argument_ranges.py": ("test_duration_parser_fuzz", "test_size_parser_fuzz", "test_time_parsers_fuzz",),
    "test_baseline_learning.py": (
        "test_check_is_unknown_while_learning_and_a_reference_period_ends_it",
        "test_expected_same_on_a_healthy_disk",
    ),
    "test_changepoints.py": (
        "test_changes_command_on_a_store_with_a_planted_episode",
        "test_false_positive_rate_on_stationary_noise",
    ),
    "test_changes_web.py": (
        "test_history_json_marks_only_the_target_that_changed",
        "test_pages_answer_without_the_change_point_libraries",
        "test_timeline_json_carries_the_planted_change",
    ),
    "test_collect_cli.py": (
        "test_collect_lustre_tree_json_and_store",
        "test_collect_unprivileged_with_an_unreadable_file",
        "test_collect_with_a_hung_file_goes_on_with_the_others",
    ),
    "test_collect_kill.py": ("test_collect_killed_during_flushes_stores_no_row_twice",),
    "test_collect_policy.py": (
        "test_a_refused_flush_is_retried_and_the_stop_waits_for_the_store",
        "test_a_slow_store_delays_no_tick",
        "test_a_store_that_never_comes_back_fails_the_stop_in_one_line",
    ),
    "test_darshan_cli.py": (
        "test_bad_logs_one_line_error",
        "test_cores_per_node_gives_mibps_per_node",
        "test_damaged_dxt_region_leaves_the_timeline_out",
        "test_html_escapes_file_names",
        "test_human_report",
        "test_human_report_opens_with_the_verdict_and_no_scientific_notation",
        "test_job_json_contract",
        "test_log_path_with_spaces_and_unicode",
        "test_missing_file",
        "test_thresholds_option",
    ),
    "test_darshan_isolation.py": (
        "test_follow_symlinks_never_reaches_proc",
        "test_fuzz_job_never_dies_of_a_mutated_or_byte_swapped_log",
        "test_ingest_of_a_10_gib_sparse_file",
        "test_ingest_of_one_log_that_kills_the_reader",
        "test_ingest_stores_good_logs_beside_one_that_kills_the_reader",
        "test_job_on_a_log_that_kills_the_reader_is_one_line",
        "test_job_on_a_name_that_is_not_utf8",
        "test_other_commands_refuse_a_name_that_is_not_utf8_in_one_line",
    ),
    "test_darshan_metrics.py": (
        "test_agg_perf_by_slowest_matches_pydarshan_accumulator",
        "test_findings_come_most_expensive_first",
        "test_rank0_only_io_and_no_mpiio",
        "test_sharing_classes_match_the_accumulator_categories",
    ),
    "test_darshan_reader.py": ("test_every_real_log_loads_like_pydarshan",),
    "test_dead_code.py": (
        "test_an_unused_function_is_found",
        "test_every_whitelist_entry_is_needed",
        "test_vulture_finds_no_dead_code",
    ),
    "test_docs_examples.py": (
        "test_event_times_match_the_json_to_the_second",
        "test_workload_worked_example_as_written",
    ),
    "test_events_probe_cost.py": (
        "test_a_higher_threshold_makes_no_event_contended",
        "test_only_contended_events_cost",
        "test_probe_slowdown_of_each_event_against_the_rows",
    ),
    "test_factors_cli.py": (
        "test_classify_recovers_each_experiment",
        "test_density_by_group_with_plots_and_throughput",
        "test_probe_samples_from_the_store",
    ),
    "test_fs_name.py": ("test_probe_bench_and_collect_name_one_directory_alike",),
    "test_fsstats_outputs.py": ("test_regular_outputs_are_replaced_whole", "test_symlink_at_the_output_is_refused",),
    "test_hostile_files.py": (
        "test_html_output_never_follows_a_symlink",
        "test_ingest_follows_links_when_asked",
        "test_ingest_never_hangs_and_never_follows_links",
        "test_job_on_a_fifo_or_device_is_one_line",
    ),
    "test_hostile_names.py": (
        "test_fsstats_labels_and_directories",
        "test_probe_tables_print_markup_like_names_verbatim",
        "test_target_longer_than_255_characters_is_refused_at_the_door",
        "test_unknown_markup_target_in_an_error_is_printed_verbatim",
    ),
    "test_hostile_second_pass.py": (
        "test_factors_density_adjust_beyond_any_kernel_is_one_line",
        "test_factors_model_and_input_fifos_are_refused",
        "test_factors_outputs_refuse_a_planted_link",
        "test_factors_outputs_replace_a_file_whole",
        "test_iomodel_outputs_refuse_a_planted_link",
        "test_job_thresholds_fifo_is_refused",
        "test_other_direct_inputs_refuse_a_fifo",
        "test_target_and_file_names_in_import_tables",
        "test_umami_html_never_writes_through_a_link",
    ),
    "test_hostile_second_pass_bench.py": (
        "test_two_jobs_of_one_name_are_two_runs",
        "test_values_fio_never_writes_are_refused_with_the_reason",
    ),
    "test_hostile_second_pass_sacct.py": (
        "test_a_300_character_job_id_is_refused",
        "test_a_fifo_or_a_kernel_file_is_refused_at_once",
        "test_deeply_nested_pytokio_json_is_one_line",
        "test_values_beyond_the_columns_are_bad_lines",
    ),
    "test_hostile_second_pass_store.py": (
        "test_a_full_disk_is_said_as_full_never_damaged",
        "test_a_subnormal_interval_is_missing_and_workload_works",
        "test_jobs_ingest_on_a_full_disk_is_one_line",
        "test_report_over_old_data_needs_no_window",
        "test_servers_until_the_first_sample_is_not_a_500",
    ),
    "test_import_files.py": (
        "test_csv_bad_files_fail_whole_and_alone",
        "test_csv_times_zones_disorder_duplicates",
        "test_real_iostat_amounts_are_rate_times_interval",
        "test_tts_and_lmt_imports_of_the_same_five_minutes_agree",
        "test_tts_sample_rates_become_bytes_per_step",
    ),
    "test_import_hostile.py": (
        "test_damaged_tts_does_not_abort_the_other_sources",
        "test_damaged_tts_is_one_line_for_every_8_byte_corruption",
        "test_damaged_tts_name_lengths_are_refused_before_they_are_allocated",
        "test_fifo_among_sources_one_line_and_the_others_imported",
        "test_import_help_lists_every_registered_kind",
    ),
    "test_import_lfsdf.py": (
        "test_archive_equals_an_independent_parse",
        "test_undated_output_needs_at",
        "test_workload_with_capacity_rows",
    ),
    "test_import_lmt.py": ("test_since_until_and_the_cli",),
    "test_import_mmperfmon.py": (
        "test_gauges_only_workload_says_so",
        "test_help_names_the_kinds",
        "test_nothing_usable_is_an_error_and_the_batch_goes_on",
        "test_workload_runs_on_imported_gpfs_data",
    ),
    "test_iomodel.py": (
        "test_bad_output_path_in_a_subprocess",
        "test_default_output_goes_under_home",
        "test_discard_is_faster_than_cached_at_every_size",
        "test_human_table_and_help",
        "test_output_contract_metadata_and_sidecar",
        "test_uncached_on_a_disk_file_system",
        "test_uncached_without_the_means_to_evict",
    ),
    "test_job_findings_cost.py": (
        "test_every_finding_is_costed_or_says_why",
        "test_sequential_wording_follows_the_evidence",
    ),
    "test_jobs_ingest.py": (
        "test_dask_option",
        "test_ingest_and_summary_on_server_databases",
        "test_ingest_is_idempotent_and_records_failures",
        "test_ingest_missing_path",
        "test_one_job_and_its_files",
        "test_reingest_skips_unchanged_files_unopened_and_reads_changed_ones",
        "test_summary_json_and_html",
    ),
    "test_jobs_ingest_light.py": (
        "test_an_unchanged_archive_is_answered_as_the_full_path_answers_it",
        "test_a_change_or_an_unusual_store_takes_the_full_path",
    ),
    "test_jobs_ingest_concurrency.py": (
        "test_a_store_with_relative_paths_is_normalised_without_rereading",
        "test_kill_9_of_ingest_takes_its_workers_along",
        "test_relative_then_absolute_path_reads_nothing_again",
        "test_sigterm_of_ingest_stops_cleanly",
        "test_the_lock_file_is_not_followed_through_a_symlink",
        "test_two_ingests_at_once_store_each_log_once",
    ),
    "test_jobs_order.py": ("test_summary_is_the_same_whatever_the_ingest_order",),
    "test_jobs_stored.py": (
        "test_jobs_list_counts_and_filters",
        "test_jobs_show_by_jobid_hash_and_ambiguous",
        "test_row_round_trip_through_the_store",
    ),
    # a store with rows of older rules, read by the commands, /api and the pages (a server)
    "test_jobs_rules_mark.py": ("test_rows_of_other_rules_are_marked_everywhere_until_the_next_ingest",),
    "test_jobs_verdict_store.py": (
        "test_ingest_stores_the_verdict_and_ranked_costs_the_pages_show",
        "test_old_store_upgrades_in_place_and_a_second_ingest_completes_it",
    ),
    "test_jobweather_typed.py": (
        "test_a_scheduler_job_answers_the_same_way",
        "test_an_imported_feature_row_answers_typed_without_a_file_system",
        "test_correlations_are_typed_and_the_cli_prints_their_rows",
        "test_every_path_builds_one_job_shape",
        "test_the_umami_answer_is_typed_and_every_surface_renders_it",
        "test_the_weather_is_built_once_and_stored_as_its_document",
        "test_why_reads_the_typed_weather",
    ),
    "test_layers.py": ("test_each_contract_catches_its_import", "test_a_new_services_module_must_take_a_layer"),
    "test_lctl_collect.py": ("test_collect_process_with_a_fake_lctl",),
    "test_lctl_export.py": ("test_capture_list_and_bad_input",),
    "test_lctl_import.py": (
        "test_a_directory_of_captures_stores_gauges_and_differences",
        "test_one_capture_without_a_time_needs_at",
        "test_the_store_exporter_names_them_as_lustrefs_exporter",
    ),
    "test_lctl_web.py": ("test_servers_shows_brw_distributions",),
    "test_learning_surfaces.py": (
        "test_learned_target_is_judged_as_before",
        "test_young_target_is_learning_cell_for_cell_on_history_and_slowdown",
    ),
    "test_little_data_import.py": (
        "test_overlapped_counts_the_jobs_in_the_imported_span",
        "test_quiet_import_prints_nothing_and_counts_only_overlapped_jobs",
    ),
    "test_little_data_numbers.py": ("test_fsstats_table_and_report_have_no_exponent",),
    "test_monitoring_check.py": (
        "test_check_never_writes_the_store",
        "test_check_on_an_empty_home_is_unknown_and_creates_nothing",
        "test_perfdata_for_every_target",
        "test_purge_asks_first_and_deletes_everything",
        "test_retired_and_abandoned_targets_no_longer_block_the_check",
        "test_slowdown_rows_say_learning_until_the_baseline_holds",
        "test_the_probe_daemon_keeps_the_summaries_a_read_only_check_needs",
        "test_unknown_target_and_bad_thresholds_are_unknown_with_one_line",
    ),
    "test_monitoring_install.py": ("test_the_nagios_command_runs_as_documented",),
    "test_monitoring_retention.py": (
        "test_prune_is_a_dry_run_then_removes_exactly_the_old_rows_and_keeps_their_summaries",
        "test_settings_and_arguments_are_checked",
        "test_telemetry_days_go_whole",
    ),
    "test_one_truth.py": ("test_nodes_never_from_processes",),
    "test_probe_archive_fulldisk.py": ("test_archive_on_a_full_disk",),
    "test_probe_concurrency.py": (
        "test_full_buffer_drops_the_oldest_counts_and_says_so",
        "test_lock_is_released_when_the_holder_is_killed",
        "test_second_probe_and_watch_on_one_directory_are_refused",
        "test_sigterm_while_the_store_is_locked_stores_everything_once_it_is_free",
        "test_sqlite_store_locked_by_another_writer_loses_no_period",
    ),
    "test_probe_fifo.py": ("test_fifo_in_the_pool_is_an_error_sample_and_is_replaced",),
    "test_probe_hostile.py": (
        "test_default_target_is_host_and_mount_point",
        "test_full_disk_during_run_leaves_no_orphans_and_a_restart_reads_no_false_errors",
        "test_init_on_a_full_disk_leaves_nothing_behind",
        "test_interrupted_init_resumes",
        "test_refused_init_leaves_no_empty_directory",
        "test_short_pool_files_left_by_an_older_run_are_replaced_at_start",
        "test_watch_takes_the_probe_options",
    ),
    "test_probe_targets.py": (
        "test_a_directory_another_probe_holds_refuses_the_whole_start",
        "test_a_hung_target_does_not_delay_the_others",
        "test_bad_target_lists_are_one_line",
        "test_kill_9_mid_run_loses_nothing_committed",
        "test_watch_probes_several_directories_one_hung",
    ),
    "test_quiet_option.py": (
        "test_every_import_subcommand_takes_q",
        "test_import_csv_quiet_prints_nothing_and_stores_the_same",
        "test_import_quiet_still_reports_a_failure",
        "test_import_slurm_quiet",
        "test_jobs_ingest_quiet",
        "test_serve_quiet_has_no_access_log",
    ),
    "test_report_escaping.py": (
        "test_jobs_summary_html_escapes_project_names",
        "test_workload_html_escapes_the_name_it_shows",
    ),
    "test_scheduler_import.py": (
        "test_a_stop_signal_ends_a_live_import_as_every_import_kind",
        "test_bad_inputs_are_one_line",
        "test_darshan_jobs_link_by_id_and_by_time_and_exe",
        "test_files_that_are_not_sacct_output",
        "test_nersc_jobsdb_matches_a_direct_query",
        "test_parsable2_file_field_by_field",
        "test_pytokio_slurm_cache_matches_a_direct_read",
        "test_sacct_failing_is_one_line",
        "test_sacct_missing_is_one_line",
        "test_since_until_keep_jobs_of_the_window",
        "test_telemetry_import_still_answers",
    ),
    "test_signals.py": ("test_export_stops_on_a_stop_signal",),
    "test_slowdown_pieces.py": (
        "test_a_day_whose_hours_are_summarized_is_not_read_again",
        "test_sqlite_pieces_equal_full_computation_with_archive_and_restart",
    ),
    "test_stats_probe.py": ("test_interval_stats_match_pandas",),
    "test_store.py": (
        "test_bad_db_urls_are_one_line_errors",
        "test_cli_reports_newer_schema_in_one_line",
        "test_empty_store_says_so",
        "test_many_processes_start_on_a_fresh_store_at_once",
        "test_not_an_sqlite_file_and_unwritable_home",
        "test_writer_waits_for_a_lock_held_for_seconds",
    ),
    "test_store_check_garbage.py": (
        "test_repair_removes_the_tmp_files_of_an_import_killed_by_sigkill",
        "test_store_check_on_a_file_that_is_no_database",
    ),
    "test_svg_charts.py": ("test_job_html_does_not_import_matplotlib",),
    "test_telemetry_compact.py": (
        "test_a_day_becomes_one_file_with_the_same_rows_and_rollup",
        "test_a_full_disk_leaves_the_small_files_and_says_so",
        "test_an_interrupted_compaction_counts_each_row_once_and_is_finished_later",
        "test_collect_compacts_its_own_finished_days",
        "test_late_files_and_other_writers_are_left_alone",
        "test_only_finished_days_are_compacted",
    ),
    "test_telemetry_counters.py": ("test_property_amounts_never_negative_and_sum_to_the_increases",),
    "test_telemetry_rollup.py": (
        "test_a_store_where_rollups_cannot_be_written_reads_rows",
        "test_older_files_get_rollups_built_and_damaged_ones_rebuilt",
        "test_rollups_go_with_their_files_and_orphans_are_ignored",
        "test_workload_through_rollups_equals_row_by_row",
    ),
    "test_umami_tokio_abc.py": (
        "test_bad_files",
        "test_edison_correlations_match_the_paper_and_scipy",
        "test_import_counts",
        "test_umami_of_a_feature_job",
    ),
    "test_watch.py": (
        "test_bad_server_options",
        "test_check_exit_codes_follow_nagios",
        "test_check_unknown_for_stale_and_empty",
    ),
    "test_web.py": (
        "test_history_matches_the_slowdown_command",
        "test_reading_while_a_live_probe_writes_does_not_block_it",
        "test_status_states_match_what_was_planted",
    ),
    "test_web_factors.py": ("test_analysis_equals_the_cli", "test_the_planted_modes_are_the_classes",),
    "test_web_hostile.py": (
        "test_allowed_host_option_and_environment",
        "test_other_host_names_are_refused",
        "test_tiny_adjust_on_the_command_line",
    ),
    "test_web_jobs.py": ("test_job_page_equals_the_job_command", "test_new_jobs_show_without_restart",),
    "test_web_workload.py": (
        "test_defaults_equal_the_cli",
        "test_new_telemetry_shows_without_restart",
        "test_random_parameters_never_500",
        "test_window_and_options_equal_the_cli",
    ),
    "test_why.py": (
        "test_a_job_of_several_logs_is_merged",
        "test_a_log_moved_since_ingest_answers_from_its_row",
        "test_a_log_path_and_the_human_output",
        "test_a_probe_still_learning_is_no_evidence",
        "test_bad_input_is_one_line",
        "test_fs_map_setting_and_its_bad_entries",
        "test_no_telemetry_for_its_file_system_says_so",
        "test_probes_on_its_file_system_cost_the_system",
        "test_quiet_file_system_says_the_code",
        "test_storm_costs_the_system_and_names_the_culprit",
        "test_the_job_page_opens_with_the_same_answer",
        "test_why_loads_no_scipy",
    ),
    "test_workload_cli.py": ("test_html_report_is_self_contained", "test_json_has_the_contract_keys",),
}

#: The markers that keep a test out of `make test-fast`.
SLOW_MARKERS = ("slow", "browser", "postgres", "mariadb", "slurm", "soak", "fuzz")


#: pytest-xdist groups (`make test` runs `-n 2`; pyproject.toml's addopts say `--dist loadgroup`): a test
#: runs in its module's group, so a module's module-scoped fixtures (its browser, its store) are built once,
#: on one worker. The modules below share a group instead, so no two of them ever run at once: those that
#: need the one real Slurm cluster (the `slurm_cluster` fixture is per worker: one worker starts it), and
#: those whose assertions are on time (probe periods within 0.25 s, a progress rate within 30 %, a lock
#: waited for, a faster cache mode, CPU of PostgreSQL's processes), which the other worker's load must not
#: add to twice over. Everything else on this machine is per test: tmp_path, a uuid-named database, a
#: tmpfs under tmp_path, ports from tests/ports.py or `--port 0`.
EXCLUSIVE_GROUPS: dict[str, tuple[str, ...]] = {
    "slurm": ("test_bench_slurm.py", "test_distributed.py", "test_slurm_import.py"),
    "timing": (
        "test_collect_cli.py", "test_collect_policy.py", "test_fsstats_progress.py", "test_iomodel.py",
        "test_iomodel_layouts.py", "test_many_probes_pg.py", "test_probe.py", "test_probe_concurrency.py",
        "test_probe_targets.py", "test_soak.py", "test_store.py", "test_watch.py",
        "test_web.py",  # a live probe's periods counted while every page is read
    ),
}


def xdist_group(module: str) -> str:
    """The xdist group of the tests of MODULE (a file name)."""
    return next((g for g, modules in EXCLUSIVE_GROUPS.items() if module in modules), module)


def pytest_xdist_make_scheduler(config, log):
    """`--dist loadgroup` with the groups above. pytest-xdist's own reads `xdist_group` marks into node
    ids, which pytest 9 no longer lets a plugin rewrite: the controller, which sees node ids only, takes
    the group from the module's name instead. The groups go out in the order the workers collected them."""
    if config.getoption("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ModuleGroups(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return xdist_group(Path(nodeid.split("::", 1)[0]).name)

    return ModuleGroups(config, log)


def _order_groups(items) -> None:
    """In an xdist worker, order the groups heaviest first (a slow test weighs as much as many fast ones), so
    that no long module starts last and keeps one core waiting; a module's own order is kept."""
    slurm = {i.path.name for i in items if i.get_closest_marker("slurm")} - set(EXCLUSIVE_GROUPS["slurm"])
    if slurm:  # two workers would each start a cluster
        raise pytest.UsageError(f"tests/conftest.py: add {', '.join(sorted(slurm))} to EXCLUSIVE_GROUPS['slurm']")
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    weight: dict[str, float] = {}
    for item in items:
        slow = any(item.get_closest_marker(m) for m in SLOW_MARKERS)
        group = xdist_group(item.path.name)
        weight[group] = weight.get(group, 0.0) + (5.0 if slow else 0.3)
    order = {g: n for n, g in enumerate(sorted(weight, key=lambda g: (-weight[g], g)))}
    items.sort(key=lambda i: order[xdist_group(i.path.name)])  # every worker alike, as xdist requires


#: A parameter that names the database server a test asks for by `request.getfixturevalue` (the
#: parametrizations `[pg_url]`, `[postgresql]`, `[mariadb]`...): that server's marker, as FIXTURE_MARKERS.
PARAM_MARKERS = {"pg_url": "postgres", "postgresql": "postgres", "postgres": "postgres",
                 "mariadb_url": "mariadb", "mariadb": "mariadb"}


def pytest_collection_modifyitems(config, items):
    for item in items:
        names = set(MODULE_MARKERS.get(item.path.name, ()))
        if item.originalname in SLOW_TESTS.get(item.path.name, ()):
            names.add("slow")
        for fixture in item.fixturenames:
            names.update(FIXTURE_MARKERS.get(fixture, ()))
        params = getattr(item, "callspec", None)
        for value in (params.params.values() if params else ()):
            if isinstance(value, str) and value in PARAM_MARKERS:
                names.add(PARAM_MARKERS[value])
        for name in sorted(names):
            item.add_marker(name)
    if config.getoption("--fast"):
        slow = [i for i in items if any(i.get_closest_marker(m) for m in SLOW_MARKERS)]
        if slow:
            config.hook.pytest_deselected(items=slow)
            items[:] = [i for i in items if not any(i.get_closest_marker(m) for m in SLOW_MARKERS)]
    _order_groups(items)


def pytest_configure(config):
    if not os.environ.get("PYTEST_XDIST_WORKER"):  # before the workers start: only what changed since
        import compileall

        compileall.compile_dir(ROOT / "src" / "ioweather", quiet=2)
    if os.environ.get("IOWEATHER_TEST_CPU"):  # CPU seconds of each test (tests/cpu_times.py)
        import cpu_times

        config.pluginmanager.register(cpu_times, "cpu_times")


def pytest_addoption(parser):
    parser.addoption("--fast", action="store_true", default=False,
                     help="the fast tier (make test-fast): leave out tests marked " + ", ".join(SLOW_MARKERS))
    parser.addoption("--update-golden", action="store_true", default=False,
                     help="tests/test_json_contract.py: rewrite tests/golden/*.json from this run")


@pytest.fixture(scope="session")
def testdata() -> Path:
    """../shared/testdata (read-only); skips when a fresh clone has no ../shared."""
    if not TESTDATA.is_dir():
        pytest.skip(f"shared test data not found at {TESTDATA}")
    return TESTDATA


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """../shared/data (read-only real data); skips when absent."""
    if not DATA.is_dir():
        pytest.skip(f"shared data not found at {DATA}")
    return DATA


@pytest.fixture
def home(tmp_path) -> Path:
    """An empty IOWEATHER_HOME."""
    h = tmp_path / "home"
    return h


def cli_env(home: Path | None, env: dict | None) -> dict:
    """The environment a command runs in, in a process or in this one (tests/inprocess.py): this one's,
    IOWEATHER_HOME set, IOWEATHER_DB left out (a developer's server is never a test's store), `env` on top."""
    full_env = dict(os.environ)
    if home is not None:
        full_env["IOWEATHER_HOME"] = str(home)
    full_env.pop("IOWEATHER_DB", None)
    full_env.update(env or {})
    return full_env


def run_cli(*args: str, home: Path | None = None, env: dict | None = None, timeout: float = 120,
            input: str | None = None, check: bool = False) -> subprocess.CompletedProcess:
    """Run `python -m ioweather ARGS` in a subprocess, as a user would."""
    proc = subprocess.run([sys.executable, "-m", "ioweather", *args], capture_output=True, text=True,
                          env=cli_env(home, env), timeout=timeout, input=input)
    if check and proc.returncode != 0:
        raise AssertionError(f"ioweather {' '.join(args)} failed ({proc.returncode}): {proc.stderr}")
    return proc


@pytest.fixture
def cli():
    return run_cli


def _pg_available() -> str | None:
    try:
        import psycopg

        with psycopg.connect(PG_ADMIN_URL.replace("postgresql://", "postgresql://", 1), connect_timeout=3):
            return None
    except Exception as e:  # any failure means: no server to test against
        return f"PostgreSQL not reachable at {PG_ADMIN_URL}: {str(e).splitlines()[0] if str(e) else type(e).__name__}"


@pytest.fixture
def pg_url():
    """A fresh PostgreSQL database on this machine's server, dropped afterwards."""
    reason = _pg_available()
    if reason:
        pytest.skip(reason)
    import psycopg

    name = f"ioweather_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    base = PG_ADMIN_URL.rsplit("/", 1)[0]
    yield f"{base}/{name}"
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def mariadb_url():
    """A fresh MariaDB database on this machine's server, dropped afterwards."""
    try:
        import pymysql

        conn = pymysql.connect(host="127.0.0.1", port=3306, user="root", password="", connect_timeout=3, autocommit=True)
    except Exception as e:
        pytest.skip(f"MariaDB not reachable at 127.0.0.1:3306: {e}")
    name = f"ioweather_test_{uuid.uuid4().hex[:12]}"
    with conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE `{name}`")
    yield f"mysql://root@127.0.0.1:3306/{name}"
    with conn.cursor() as cur:
        cur.execute(f"DROP DATABASE IF EXISTS `{name}`")
    conn.close()


@pytest.fixture(scope="session")
def chromium_path() -> str:
    """Debian's chromium, for Playwright's executable_path."""
    for p in ("/usr/bin/chromium", "/usr/bin/chromium-browser", shutil.which("chromium") or ""):
        if p and os.path.exists(p):
            return p
    pytest.skip("Debian's chromium is not installed (apt-get install chromium)")


@pytest.fixture(scope="module")
def browser(chromium_path):
    """One headless Chromium context per test module (tests/browser.py: `visit` opens pages in it)."""
    with launch(chromium_path) as context:
        yield context


@pytest.fixture(scope="session")
def artifacts_dir() -> Path:
    d = ROOT / "test-artifacts"
    d.mkdir(exist_ok=True)
    return d


def _mount_tmpfs(path: Path, opts: str) -> None:
    path.mkdir(exist_ok=True)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(path)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount tmpfs here ({r.stderr.strip()})")


@pytest.fixture
def tmpfs(tmp_path):
    """`tmpfs(name, opts)` mounts a real tmpfs (e.g. "size=4m" to fill it, "ro") under tmp_path; needs root."""
    mounted = []

    def make(name: str, opts: str = "size=64m") -> Path:
        if os.geteuid() != 0:
            pytest.skip("mounting a tmpfs needs root")
        p = tmp_path / name
        _mount_tmpfs(p, opts)
        mounted.append(p)
        return p

    yield make
    for p in reversed(mounted):
        subprocess.run(["umount", "-l", str(p)], capture_output=True)


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory):
    """A real one-node Slurm cluster (tests/slurm_cluster.py), stopped at the end; skips with the reason."""
    from slurm_cluster import SlurmCluster, SlurmUnavailable

    try:
        cluster = SlurmCluster.start(tmp_path_factory.mktemp("slurm"))
    except SlurmUnavailable as e:
        pytest.skip(str(e))
    with cluster:
        yield cluster
