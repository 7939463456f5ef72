"""`ioweather factors density|fit|classify`: performance factors from latency densities (docs/factors.md).

density  classes, splits and outlier cutoff of ln(duration)  (METHODS.md 2.2-2.3)
fit      one linear model per setup through 1.1 x each size's cutoff  (2.4)
classify which factor explains each observation  (2.5)
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ioweather.commands.common import SINCE, SIZE, TIME, json_option
from ioweather.errors import UserError
from ioweather.files import check_destination
from ioweather.services.runtime.defaults import DEFAULT_SIGNIFICANCE

DEFAULT_SETUP = ("cache", "op", "mem_layout")


# ---------------------------------------------------------------- shared options


def _input_options(f):
    """FILE... or --from-store --op OP, and how to find the durations."""
    opts = [
        click.argument("files", nargs=-1, type=click.Path(dir_okay=False, path_type=Path)),
        click.option("--column", default=None,
                     help="Duration column (default: duration_s, duration_ns, duration or value, first present)."),
        click.option("--unit", type=click.Choice(["s", "ms", "us", "ns"]), default=None,
                     help="Unit of the duration column (default: from its suffix _ns/_us/_ms, else seconds)."),
        click.option("--where", "where", multiple=True, metavar="COL=VALUE",
                     help="Keep only rows whose column has this value (repeatable), e.g. file_layout=off0."),
        click.option("--drop-invalid", is_flag=True,
                     help="Drop NaN, infinite, zero and negative durations with a warning instead of failing."),
        click.option("--from-store", is_flag=True, help="Read probe samples from the store instead of FILEs."),
        click.option("--op", default=None, help="Probe op with --from-store, e.g. data_read."),
        click.option("--target", default=None, help="Probe target with --from-store (default: the only one)."),
        click.option("--since", type=SINCE, default=None, help="With --from-store: first sample (a duration ago or a time)."),
        click.option("--until", type=TIME, default=None, help="With --from-store: end time."),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


def _density_options(f):
    opts = [
        click.option("--adjust", type=float, default=2.0, show_default=True,
                     help="Bandwidth multiplier of R's density() (the paper's 2 avoids too many classes)."),
        click.option("--significance", type=float, default=DEFAULT_SIGNIFICANCE, show_default=True,
                     help="A maximum counts when its density is at least this fraction of the highest "
                          "(docs/methods.md's 0.01 lets a tail of slow operations form classes; see docs/factors.md)."),
        click.option("--cutoff-fraction", type=float, default=0.05, show_default=True,
                     help="Outliers start where the density right of the last maximum drops below this fraction of it."),
        click.option("--split", type=click.Choice(["minimum", "mean"]), default="minimum", show_default=True,
                     help="Split classes at the density minimum between maxima, or at their (log) midpoint."),
        click.option("--r44", is_flag=True, help="R >= 4.4 kernel coordinates (default: R < 4.4, as the paper's R)."),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


def _check_outputs(*paths: Path | None) -> None:
    """Refuse an output that write_atomic would refuse (a symlink, a directory) before the analysis."""
    for p in paths:
        if p is not None:
            check_destination(p)


def _say(line: str) -> None:
    click.echo(line, err=True)


# ---------------------------------------------------------------- the runs (services/answers/factors.py)
# Imported when a factors command runs: loading the CLI must not import pandas, pyarrow and scipy.


def _run_density(settings, *, files, column, unit, where, drop_invalid, from_store, op, target, since, until, by,
                 adjust, significance, cutoff_fraction, split, r44, plot):
    """(classes, splits and outliers per group, how many groups failed), optional Fig. 2."""
    # lazy: numpy, pandas, pyarrow, sqlalchemy via services.answers.factors: kept off the command's `--help` and its usage errors
    from ioweather.services.answers import factors as svc
    # lazy: numpy, pandas, pyarrow, sqlalchemy via services.answers.factors: kept off the command's `--help` and its usage errors
    from ioweather.services.answers.factors import groups, split_cols
    # lazy: rich via views.output: kept off the command's `--help` and its usage errors
    from ioweather.views.output import progress

    opts = svc.density_options(adjust, significance, cutoff_fraction, split, r44)
    _check_outputs(plot)
    by_cols = split_cols(by)
    df, name = svc.load_table(settings, files, from_store=from_store, op=op, target=target, since=since,
                              until=until, column=column, unit=unit, where=where,
                              need=[*by_cols, *svc.optional_columns(files, from_store, ["size", "start_ns"])])
    parts = groups(df, by_cols)
    runs, failed = [], 0
    with progress() as bar:
        task = bar.add_task("densities", total=len(parts))
        for run in svc.density_runs(parts, name, opts, drop_invalid, _say):
            if run.error is not None:
                _say(f"ioweather: error: {run.message}")
                failed += 1
            elif plot is not None:
                # lazy: numpy via views.factors_plot: kept off the command's `--help` and its usage errors
                from ioweather.views.factors_plot import density_figure

                density_figure(_plot_path(plot, run.group, bool(by_cols)), run.durations, run.analysis,
                               title=f"{run.what}: {len(run.durations)} operations", order=run.timeline_order())
            if run.error is None or run.group:
                runs.append(run)
            bar.advance(task)
    return svc.Densities(runs, bool(by_cols)), failed


def _print_densities(densities) -> None:
    # lazy: numpy, pandas, pyarrow, sqlalchemy via services.answers.factors: kept off the command's `--help` and its usage errors
    from ioweather.services.answers.factors import group_name
    # lazy: rich via views.factors_tables: kept off the command's `--help` and its usage errors
    from ioweather.views.factors_tables import print_density

    for r in densities.runs:
        if r.error is None:
            print_density(r.analysis.as_dict(), group_name(r.group) if densities.grouped else r.what)


def _plot_path(plot: Path, group: dict, many: bool) -> Path:
    if not many:
        return plot
    tag = "_".join(f"{k}-{v}" for k, v in group.items()).replace("/", "-")
    return plot.with_name(f"{plot.stem}_{tag}{plot.suffix or '.png'}")


def _run_fit(settings, *, files, column, unit, where, drop_invalid, from_store, op, target, since, until, by,
             size_column, size_cap, small_max, margin, adjust, significance, cutoff_fraction, split, r44, out):
    """(the model file written, how many setups failed): one model per setup."""
    # lazy: numpy, pandas, pyarrow, sqlalchemy via services.answers.factors: kept off the command's `--help` and its usage errors
    from ioweather.services.answers import factors as svc
    # lazy: rich via views.output: kept off the command's `--help` and its usage errors
    from ioweather.views.output import progress

    if from_store:
        raise UserError("fit needs io-model runs with known setups: give FILEs (--from-store is for density/classify)")
    if margin < 0:
        raise UserError("--margin must not be negative")
    opts = svc.density_options(adjust, significance, cutoff_fraction, split, r44)
    _check_outputs(out)
    inp = svc.fit_input(settings, files, column=column, unit=unit, where=where, op=op, target=target, since=since,
                        until=until, by=by, size_column=size_column, size_cap=size_cap)
    with progress() as bar:
        task = bar.add_task("fitting", total=inp.total_sizes)
        models, failed = svc.fit_models(inp, drop_invalid=drop_invalid, small_max=small_max, margin=margin, opts=opts,
                                        say=_say, on_size=lambda: bar.advance(task))
    return svc.save_models(models, out, files=files, setup_cols=inp.setup_cols, margin=margin, opts=opts), failed


def _run_classify(settings, *, files, column, unit, where, drop_invalid, from_store, op, target, since, until,
                  model_path, size_column, fixed_size, match, by, else_label, out, plot):
    """The factor of each observation (Table 4), optional rows and Figs. 5-6."""
    # lazy: numpy, pandas, pyarrow, sqlalchemy via services.answers.factors: kept off the command's `--help` and its usage errors
    from ioweather.services.answers import factors as svc

    _check_outputs(out, plot)
    c = svc.classify_rows(settings, files, column=column, unit=unit, where=where, drop_invalid=drop_invalid,
                          from_store=from_store, op=op, target=target, since=since, until=until,
                          model_path=model_path, size_column=size_column, fixed_size=fixed_size, match=match, by=by,
                          else_label=else_label, say=_say)
    if out is not None:
        svc.write_rows(c.df, out)
    if plot is not None:
        # lazy: numpy via views.factors_plot: kept off the command's `--help` and its usage errors
        from ioweather.views.factors_plot import classify_figure

        classify_figure(plot, c.sizes, c.durations, c.labels, c.class_order, c.models, c.match_cols, else_label,
                        title=f"{c.name}: {len(c.durations)} operations")
    return c


def register(cli: click.Group) -> None:
    @cli.group()
    def factors():
        """Which hidden performance factor each operation hit, from latency densities (docs/factors.md)."""

    @factors.command("density")
    @_input_options
    @click.option("--by", default=None, metavar="COLS", help="Analyse each group separately, e.g. --by size.")
    @_density_options
    @click.option("--plot", type=click.Path(dir_okay=False, path_type=Path), default=None,
                  help="PNG: timeline coloured by class above the density with splits and cutoff (Fig. 2).")
    @json_option
    @click.pass_obj
    def density_cmd(settings, as_json, **params):
        """Classes, splits and outlier cutoff of the durations in FILE (docs/methods.md §2.2-2.3).

        The density is R's density(log(duration), adjust = 2) to floating-point noise;
        its significant maxima are the performance factors, the minima between them
        split the classes, and durations past the cutoff are outliers (congestion).
        """
        # lazy: rich via views.output: kept off the command's `--help` and its usage errors
        from ioweather.views.output import print_json

        densities, failed = _run_density(settings, **params)
        if as_json:
            doc = densities.to_json()
            if doc is not None:  # one input whose density failed: said on stderr, nothing on stdout
                print_json(doc)
        else:
            _print_densities(densities)
        if failed:
            sys.exit(2)

    @factors.command("fit")
    @_input_options
    @click.option("--by", default=",".join(DEFAULT_SETUP), show_default=True, metavar="COLS",
                  help="Columns that define a setup (one model each); '' for one model over everything.")
    @click.option("--size-column", default="size", show_default=True, help="Access size column (bytes).")
    @click.option("--size-cap", "size_cap", multiple=True, metavar="[LABEL=]SIZE",
                  help="Fit only sizes up to SIZE (all models, or the one named LABEL), e.g. cached-W-off0=2MiB.")
    @click.option("--small-max", type=SIZE, default="4096", show_default=True,
                  help="Largest size of the small model; the large one starts from its value here.")
    @click.option("--margin", type=float, default=0.10, show_default=True,
                  help="Fit (1 + margin) x each size's outlier cutoff.")
    @_density_options
    @click.option("--out", "out", type=click.Path(dir_okay=False, path_type=Path), required=True,
                  help="Model JSON to write.")
    @json_option
    @click.pass_obj
    def fit_cmd(settings, as_json, **params):
        """Fit one linear model per setup (cache state x op x memory layout) (docs/methods.md §2.4).

        For each access size, 1.1 x the outlier cutoff of its durations; least squares
        for sizes <= 4096 B; above, the intercept is fixed to the small model at 4096 B
        and only the slope is fitted. Prints the paper's Table 3.
        """
        # lazy: rich via views.factors_tables: kept off the command's `--help` and its usage errors
        from ioweather.views.factors_tables import print_models
        # lazy: rich via views.output: kept off the command's `--help` and its usage errors
        from ioweather.views.output import print_json

        saved, failed = _run_fit(settings, **params)
        if as_json:
            print_json(saved.to_json())
        else:
            print_models(saved.models, saved.path)
        if failed:
            sys.exit(2)

    @factors.command("classify")
    @_input_options
    @click.option("--model", "model_path", type=click.Path(dir_okay=False, path_type=Path), required=True,
                  help="Model JSON written by 'ioweather factors fit'.")
    @click.option("--size-column", default="size", show_default=True, help="Access size column (bytes).")
    @click.option("--size", "fixed_size", type=SIZE, default=None,
                  help="Access size of every observation (probe samples: default the runs' block size).")
    @click.option("--match", default=None, metavar="COLS",
                  help="Columns an observation must share with a model (default: op, when models and data have it).")
    @click.option("--by", default=None, metavar="COLS",
                  help="Experiment columns of the result table (default: cache, mem_layout, file_layout, op present).")
    @click.option("--else-label", default="uncached", show_default=True,
                  help="Class of observations slower than every model.")
    @click.option("--out", "out", type=click.Path(dir_okay=False, path_type=Path), default=None,
                  help="Write the rows with their class (column 'factor'); .csv or .parquet.")
    @click.option("--plot", type=click.Path(dir_okay=False, path_type=Path), default=None,
                  help="PNG: timeline coloured by class (Fig. 6) and the model lines over the observations (Fig. 5).")
    @json_option
    @click.pass_obj
    def classify_cmd(settings, as_json, **params):
        """Classify each observation by the first model that explains it (docs/methods.md §2.5).

        Models are sorted by their prediction at the observation's size; the first
        whose prediction is >= the duration names the factor, else --else-label.
        Prints the share of each class per experiment (the paper's Table 4).
        """
        # lazy: rich via views.factors_tables: kept off the command's `--help` and its usage errors
        from ioweather.views.factors_tables import print_shares
        # lazy: rich via views.output: kept off the command's `--help` and its usage errors
        from ioweather.views.output import print_json

        classified = _run_classify(settings, **params)
        if as_json:
            print_json(classified.to_json())
            return
        print_shares(classified.to_json()["experiments"], classified.class_order)
