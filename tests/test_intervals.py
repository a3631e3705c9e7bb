"""Intervals, units, schedules, batches, macros and the output filter (no Spark session needed).

Output-filter expectations live in ``fixtures/output_filter/<case>.sql``: header
lines ``-- type: <spark type>``, optional ``-- format: <strftime>``, and
``-- interval: <start> / <end>``, then the expected Spark SQL (whitespace-insensitive)
for the query ``SELECT ds, amount FROM raw.sales`` with time column ``ds``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlglot

from pyspark_incr.errors import ModelDefinitionError
from pyspark_incr.intervals import Interval, IntervalSet, IntervalUnit, format_ms, to_ms
from pyspark_incr.intervals.batching import batches
from pyspark_incr.intervals.schedule import Schedule
from pyspark_incr.intervals.times import to_end_ms
from pyspark_incr.model.render import QUERY_ALIAS, macro_values, output_filter, render_query, time_bounds
from pyspark_incr.plan.environment import table_for

FILTER_FIXTURES = sorted((Path(__file__).parent / "fixtures" / "output_filter").glob("*.sql"))
H = 3_600_000


def iv(start: str, end: str) -> Interval:
    return Interval(to_ms(start), to_ms(end))


def days(*pairs: tuple[str, str]) -> IntervalSet:
    return IntervalSet([iv(a, b) for a, b in pairs])


def fmt(ms: int) -> str:
    return format_ms(ms)


# =========================================================================== IntervalSet


def test_interval_end_before_start_is_refused():
    with pytest.raises(ValueError, match="before start"):
        Interval(10, 5)


def test_interval_prints_as_half_open_range():
    assert str(iv("2024-01-01", "2024-01-01 06:00:00")) == "[2024-01-01, 2024-01-01 06:00:00)"


def test_set_sorts_merges_overlaps_and_drops_empty_intervals():
    s = IntervalSet([Interval(30, 40), Interval(0, 10), Interval(5, 15), Interval(20, 20)])
    assert list(s) == [Interval(0, 15), Interval(30, 40)]
    assert (s.start, s.end, len(s)) == (0, 40, 2)


def test_adjacent_intervals_merge_into_one_range():
    assert list(IntervalSet([Interval(10, 20), Interval(0, 10)])) == [Interval(0, 20)]


def test_interval_contained_in_another_is_absorbed():
    assert list(IntervalSet([Interval(0, 100), Interval(10, 20)])) == [Interval(0, 100)]


def test_empty_set_is_falsy_and_has_no_bounds():
    empty = IntervalSet()
    assert not empty and len(empty) == 0
    assert (empty.start, empty.end) == (None, None)
    assert str(empty) == "(none)"
    assert IntervalSet([Interval(5, 5)]) == empty


def test_an_empty_difference_or_intersection_is_one_shared_set_equal_to_any_empty_set():
    a = IntervalSet([Interval(0, 10)])
    nothing = a - IntervalSet([Interval(0, 20)])
    assert nothing is a.intersection(IntervalSet([Interval(30, 40)]))  # made once: a run asks it of every idle model
    assert nothing == IntervalSet() and not nothing and list(nothing | [Interval(1, 2)]) == [Interval(1, 2)]


def test_sets_with_the_same_ranges_are_equal_and_hash_alike():
    a = IntervalSet([Interval(0, 10), Interval(10, 20)])
    b = IntervalSet([(0, 20)])
    assert a == b and hash(a) == hash(b)
    assert a != IntervalSet([(0, 21)])


def test_union_merges_adjacent_ranges_from_both_sides():
    a = days(("2024-01-01", "2024-01-03"))
    b = days(("2024-01-03", "2024-01-05"), ("2024-01-10", "2024-01-11"))
    assert a | b == days(("2024-01-01", "2024-01-05"), ("2024-01-10", "2024-01-11"))
    assert a.union(b) == b.union(a)


def test_union_with_empty_set_is_identity():
    a = IntervalSet([(0, 10)])
    assert a | IntervalSet() == a and IntervalSet() | a == a


def test_difference_cuts_holes_and_keeps_the_edges():
    whole = IntervalSet([(0, 100)])
    holes = IntervalSet([(10, 20), (50, 60)])
    assert whole - holes == IntervalSet([(0, 10), (20, 50), (60, 100)])


def test_difference_with_an_adjacent_range_removes_nothing():
    a = IntervalSet([(10, 20)])
    assert a - IntervalSet([(0, 10), (20, 30)]) == a


def test_difference_with_a_covering_range_is_empty():
    assert not (IntervalSet([(10, 20), (30, 40)]) - IntervalSet([(0, 50)]))


def test_difference_with_empty_set_is_identity_and_empty_minus_anything_is_empty():
    a = IntervalSet([(10, 20)])
    assert a - IntervalSet() == a
    assert IntervalSet() - a == IntervalSet()


def test_difference_where_one_hole_spans_two_ranges():
    a = IntervalSet([(0, 10), (20, 30)])
    assert a - IntervalSet([(5, 25)]) == IntervalSet([(0, 5), (25, 30)])


def test_intersection_keeps_only_the_overlap():
    a = IntervalSet([(0, 20), (30, 40)])
    assert a.intersection(IntervalSet([(5, 35)])) == IntervalSet([(5, 20), (30, 35)])


def test_intersection_of_adjacent_or_disjoint_sets_is_empty():
    assert not IntervalSet([(0, 10)]).intersection(IntervalSet([(10, 20)]))
    assert not IntervalSet([(0, 10)]).intersection(IntervalSet())


def test_set_operations_agree_with_pointwise_sets():
    """Exhaustive small cases: every op matches the set of covered integer points."""
    import itertools

    shapes = [(), ((0, 3),), ((2, 5),), ((0, 2), (4, 6)), ((1, 2), (3, 4), (5, 6)), ((0, 6),), ((6, 8),)]
    points = lambda s: {p for r in s for p in range(r.start, r.end)}  # noqa: E731
    for x, y in itertools.product(shapes, repeat=2):
        a, b = IntervalSet(x), IntervalSet(y)
        assert points(a | b) == points(a) | points(b), (x, y)
        assert points(a - b) == points(a) - points(b), (x, y)
        assert points(a.intersection(b)) == points(a) & points(b), (x, y)
        # built without sorting again: each result must be what normalizing its ranges gives
        for result in (a - b, a.intersection(b)):
            assert list(result) == list(IntervalSet(list(result))), (x, y, result)


def test_covers_needs_every_instant_of_the_interval():
    s = days(("2024-01-01", "2024-01-03"), ("2024-01-04", "2024-01-05"))
    assert s.covers(iv("2024-01-01", "2024-01-03"))
    assert s.covers(iv("2024-01-02", "2024-01-02 12:00:00"))
    assert not s.covers(iv("2024-01-02", "2024-01-05"))
    assert s.covers(Interval(0, 0))


# =========================================================================== IntervalUnit


@pytest.mark.parametrize(
    ("unit", "moment", "floor"),
    [
        (IntervalUnit.FIVE_MINUTE, "2024-03-05 13:14:59", "2024-03-05 13:10:00"),
        (IntervalUnit.QUARTER_HOUR, "2024-03-05 13:14:59", "2024-03-05 13:00:00"),
        (IntervalUnit.HALF_HOUR, "2024-03-05 13:44:00", "2024-03-05 13:30:00"),
        (IntervalUnit.HOUR, "2024-03-05 13:59:59.999", "2024-03-05 13:00:00"),
        (IntervalUnit.DAY, "2024-03-05 23:59:59", "2024-03-05"),
        (IntervalUnit.MONTH, "2024-02-29 23:00:00", "2024-02-01"),
        (IntervalUnit.YEAR, "2024-12-31 23:59:59", "2024-01-01"),
        (IntervalUnit.DAY, "1969-12-31 12:00:00", "1969-12-31"),
    ],
    ids=lambda v: v.value if isinstance(v, IntervalUnit) else None,
)
def test_floor_is_the_start_of_the_containing_unit(unit, moment, floor):
    assert unit.floor(to_ms(moment)) == to_ms(floor)
    assert unit.floor(to_ms(floor)) == to_ms(floor)


@pytest.mark.parametrize(
    ("unit", "start", "n", "result"),
    [
        (IntervalUnit.FIVE_MINUTE, "2024-01-01 23:55:00", 1, "2024-01-02"),
        (IntervalUnit.QUARTER_HOUR, "2024-01-01", 5, "2024-01-01 01:15:00"),
        (IntervalUnit.HALF_HOUR, "2024-01-01 23:30:00", 3, "2024-01-02 01:00:00"),
        (IntervalUnit.HOUR, "2024-03-31 00:00:00", 24, "2024-04-01"),
        (IntervalUnit.DAY, "2024-02-28", 1, "2024-02-29"),
        (IntervalUnit.DAY, "2023-02-28", 1, "2023-03-01"),
        (IntervalUnit.DAY, "2024-12-31", 1, "2025-01-01"),
        (IntervalUnit.DAY, "2024-03-01", -1, "2024-02-29"),
        (IntervalUnit.MONTH, "2024-01-01", 1, "2024-02-01"),
        (IntervalUnit.MONTH, "2024-12-01", 1, "2025-01-01"),
        (IntervalUnit.MONTH, "2024-01-01", 14, "2025-03-01"),
        (IntervalUnit.MONTH, "2024-03-01", -3, "2023-12-01"),
        (IntervalUnit.YEAR, "2024-01-01", 1, "2025-01-01"),
        (IntervalUnit.YEAR, "2024-01-01", -2, "2022-01-01"),
    ],
    ids=lambda v: v.value if isinstance(v, IntervalUnit) else None,
)
def test_add_moves_by_whole_units_across_month_and_year_boundaries(unit, start, n, result):
    assert unit.add(to_ms(start), n) == to_ms(result)


@pytest.mark.parametrize(
    ("unit", "start", "end", "count"),
    [
        (IntervalUnit.FIVE_MINUTE, "2024-01-01", "2024-01-02", 288),
        (IntervalUnit.QUARTER_HOUR, "2024-01-01", "2024-01-02", 96),
        (IntervalUnit.HALF_HOUR, "2024-01-01", "2024-01-02", 48),
        (IntervalUnit.HOUR, "2024-01-01", "2024-01-02", 24),
        (IntervalUnit.DAY, "2024-02-01", "2024-03-01", 29),
        (IntervalUnit.DAY, "2023-02-01", "2023-03-01", 28),
        (IntervalUnit.DAY, "2024-01-01", "2025-01-01", 366),
        (IntervalUnit.DAY, "2023-01-01", "2024-01-01", 365),
        (IntervalUnit.MONTH, "2023-11-01", "2024-03-01", 4),
        (IntervalUnit.YEAR, "2020-01-01", "2024-01-01", 4),
        (IntervalUnit.DAY, "2024-01-05", "2024-01-05", 0),
        (IntervalUnit.DAY, "2024-01-05", "2024-01-01", 0),
    ],
    ids=lambda v: v.value if isinstance(v, IntervalUnit) else None,
)
def test_count_is_the_number_of_whole_units_in_a_range(unit, start, end, count):
    assert unit.count(to_ms(start), to_ms(end)) == count


def test_add_and_count_are_inverse_for_every_unit():
    start = to_ms("2023-11-01")
    for unit in IntervalUnit:
        for n in (0, 1, 7, 13):
            assert unit.count(start, unit.add(start, n)) == n, (unit, n)


def test_ceil_rounds_up_to_the_next_unit_unless_already_aligned():
    assert IntervalUnit.DAY.ceil(to_ms("2024-02-28 00:00:01")) == to_ms("2024-02-29")
    assert IntervalUnit.DAY.ceil(to_ms("2024-02-28")) == to_ms("2024-02-28")
    assert IntervalUnit.MONTH.ceil(to_ms("2024-02-10")) == to_ms("2024-03-01")
    assert IntervalUnit.YEAR.ceil(to_ms("2024-06-01")) == to_ms("2025-01-01")


def test_month_quarter_and_year_are_the_calendar_units():
    assert {u for u in IntervalUnit if u.is_calendar} == {IntervalUnit.MONTH, IntervalUnit.QUARTER, IntervalUnit.YEAR}


# =========================================================================== cron -> unit


@pytest.mark.parametrize(
    ("cron", "unit"),
    [
        ("@hourly", "hour"),
        ("*/5 * * * *", "five_minute"),
        ("*/10 * * * *", "five_minute"),
        ("*/15 * * * *", "quarter_hour"),
        ("*/30 * * * *", "half_hour"),
        ("0 */2 * * *", "hour"),
        ("@daily", "day"),
        ("0 12 * * *", "day"),
        ("0 0 * * 1-5", "day"),
        ("@weekly", "day"),
        ("0 0 1,15 * *", "day"),
        ("@monthly", "month"),
        ("0 0 1 */3 *", "month"),
        ("@yearly", "year"),
    ],
)
def test_unit_is_inferred_from_the_shortest_gap_between_cron_ticks_as_sqlmesh_does(cron, unit):
    assert Schedule.parse(cron).unit.value == unit


def test_explicit_interval_unit_wins_over_the_cron():
    assert Schedule.parse("@daily", "HOUR").unit is IntervalUnit.HOUR


def test_unknown_interval_unit_lists_the_valid_ones():
    with pytest.raises(ModelDefinitionError, match="interval_unit 'fortnight' is unknown; use one of five_minute"):
        Schedule.parse("@daily", "fortnight", where="model a.b")


@pytest.mark.parametrize("cron", ["", "every day", "61 * * * *", "* * *"])
def test_invalid_cron_is_refused_naming_the_model(cron):
    with pytest.raises(ModelDefinitionError, match=r"model a\.b: cron .* is not a valid cron expression"):
        Schedule.parse(cron, where="model a.b")


@pytest.mark.parametrize("cron", ["* * * * *", "*/2 * * * *"])
def test_cron_faster_than_five_minutes_is_refused_as_in_sqlmesh(cron):
    with pytest.raises(ModelDefinitionError, match="5 minutes"):
        Schedule.parse(cron, where="model a.b")


# =========================================================================== Schedule.due_end / expected


def test_daily_cron_makes_yesterday_due_from_midnight():
    s = Schedule.parse("@daily")
    assert fmt(s.due_end(to_ms("2024-01-05 00:00:00"))) == "2024-01-05"
    assert fmt(s.due_end(to_ms("2024-01-04 23:59:59"))) == "2024-01-04"


def test_noon_cron_makes_yesterday_due_only_after_noon():
    s = Schedule.parse("0 12 * * *")
    assert fmt(s.due_end(to_ms("2024-01-05 11:59:00"))) == "2024-01-04"
    assert fmt(s.due_end(to_ms("2024-01-05 12:00:00"))) == "2024-01-05"
    assert fmt(s.due_end(to_ms("2024-01-05 23:00:00"))) == "2024-01-05"


def test_ignore_cron_makes_every_complete_interval_due():
    s = Schedule.parse("0 12 * * *")
    assert fmt(s.due_end(to_ms("2024-01-05 10:00:00"), ignore_cron=True)) == "2024-01-05"


def test_allow_partials_makes_the_running_interval_due_up_to_the_last_cron_tick_or_now_when_ignoring_the_cron():
    s = Schedule.parse("0 12 * * *")
    now = to_ms("2024-01-05 10:30:00")
    assert fmt(s.due_end(now, allow_partials=True)) == "2024-01-04 12:00:00"
    assert s.due_end(now, allow_partials=True, ignore_cron=True) == now


def test_hourly_unit_on_a_daily_cron_waits_for_the_cron():
    s = Schedule.parse("@daily", "hour")
    now = to_ms("2024-01-05 10:30:00")
    assert fmt(s.due_end(now)) == "2024-01-05"
    assert fmt(s.due_end(now, ignore_cron=True)) == "2024-01-05 10:00:00"


def test_monthly_schedule_is_due_for_the_previous_month():
    s = Schedule.parse("@monthly")
    assert fmt(s.due_end(to_ms("2024-03-15 08:00:00"))) == "2024-03-01"
    assert fmt(s.due_end(to_ms("2024-03-01 00:00:00"))) == "2024-03-01"


def test_last_tick_is_the_latest_tick_at_or_before_the_moment():
    s = Schedule.parse("0 12 * * *")
    assert fmt(s.last_tick(to_ms("2024-01-05 12:00:00"))) == "2024-01-05 12:00:00"
    assert fmt(s.last_tick(to_ms("2024-01-05 11:59:58"))) == "2024-01-04 12:00:00"


def test_last_tick_is_never_after_the_moment_even_a_fraction_of_a_second_before_a_tick():
    s = Schedule.parse("0 12 * * *")
    moment = to_ms("2024-01-05 11:59:59.500")
    assert s.last_tick(moment) <= moment
    assert fmt(s.due_end(moment)) == "2024-01-04"


def test_expected_range_runs_from_the_floored_start_to_the_due_end():
    s = Schedule.parse("@daily")
    got = s.expected(to_ms("2024-01-01 05:00:00"), None, to_ms("2024-01-05 10:00:00"))
    assert got == iv("2024-01-01", "2024-01-05")


def test_expected_range_stops_at_an_inclusive_date_end():
    s = Schedule.parse("@daily")
    got = s.expected(to_ms("2024-01-01"), to_end_ms("2024-01-02"), to_ms("2024-02-01"))
    assert got == iv("2024-01-01", "2024-01-03")


def test_expected_range_rounds_a_mid_unit_end_up_to_cover_it():
    s = Schedule.parse("@hourly")
    got = s.expected(to_ms("2024-01-01"), to_ms("2024-01-01 12:30:00"), to_ms("2024-02-01"))
    assert got == iv("2024-01-01", "2024-01-01 13:00:00")


def test_expected_range_uses_the_due_end_when_it_comes_before_the_end():
    s = Schedule.parse("@daily")
    got = s.expected(to_ms("2024-01-01"), to_end_ms("2024-12-31"), to_ms("2024-01-03 08:00:00"))
    assert got == iv("2024-01-01", "2024-01-03")


def test_expected_range_is_empty_when_the_start_is_not_due_yet():
    s = Schedule.parse("@daily")
    got = s.expected(to_ms("2024-01-10"), None, to_ms("2024-01-05"))
    assert got.empty and got.start == to_ms("2024-01-10")


def test_expected_range_passes_ignore_cron_and_allow_partials_on():
    s = Schedule.parse("0 12 * * *")
    now = to_ms("2024-01-05 10:00:00")
    assert s.expected(to_ms("2024-01-01"), None, now).end == to_ms("2024-01-04")
    assert s.expected(to_ms("2024-01-01"), None, now, ignore_cron=True).end == to_ms("2024-01-05")
    assert s.expected(to_ms("2024-01-01"), None, now, allow_partials=True).end == to_ms("2024-01-04 12:00:00")


# =========================================================================== batches


def test_without_batch_size_each_contiguous_missing_range_is_one_job():
    gaps = days(("2024-01-01", "2024-01-04"), ("2024-01-06", "2024-01-07"))
    assert batches(gaps, IntervalUnit.DAY) == [iv("2024-01-01", "2024-01-04"), iv("2024-01-06", "2024-01-07")]


def test_batch_size_splits_ranges_and_a_gap_always_starts_a_new_job():
    gaps = days(("2024-01-01", "2024-01-06"), ("2024-01-07", "2024-01-08"))
    assert batches(gaps, IntervalUnit.DAY, 2) == [
        iv("2024-01-01", "2024-01-03"),
        iv("2024-01-03", "2024-01-05"),
        iv("2024-01-05", "2024-01-06"),
        iv("2024-01-07", "2024-01-08"),
    ]


def test_batch_size_of_one_gives_one_job_per_interval():
    gaps = IntervalSet([iv("2024-01-01 22:00:00", "2024-01-02 01:00:00")])
    jobs = batches(gaps, IntervalUnit.HOUR, 1)
    assert [fmt(j.start) for j in jobs] == ["2024-01-01 22:00:00", "2024-01-01 23:00:00", "2024-01-02"]
    assert all(j.end - j.start == H for j in jobs)


def test_batch_size_larger_than_the_range_gives_one_job():
    gaps = days(("2024-01-01", "2024-01-03"))
    assert batches(gaps, IntervalUnit.DAY, 30) == [iv("2024-01-01", "2024-01-03")]


def test_monthly_batches_follow_calendar_months():
    gaps = days(("2024-01-01", "2024-04-01"))
    assert batches(gaps, IntervalUnit.MONTH, 2) == [iv("2024-01-01", "2024-03-01"), iv("2024-03-01", "2024-04-01")]


def test_nothing_missing_gives_no_jobs():
    assert batches(IntervalSet(), IntervalUnit.DAY) == []
    assert batches(IntervalSet(), IntervalUnit.DAY, 3) == []


# =========================================================================== macros


def _macros(interval: Interval, execution: str) -> dict[str, str]:
    return {k: v.sql("spark") for k, v in macro_values(interval, to_ms(execution)).items()}


def test_daily_interval_macros_have_inclusive_ends_as_in_sqlmesh():
    m = _macros(iv("2024-01-01", "2024-01-02"), "2024-01-03 07:08:09")
    assert m["start_ds"] == m["end_ds"] == "'2024-01-01'"
    assert m["start_ts"] == "'2024-01-01 00:00:00'"
    assert m["end_ts"] == "'2024-01-01 23:59:59.999999'"
    assert m["start_date"] == m["end_date"] == "CAST('2024-01-01' AS DATE)"
    assert m["start_dt"] == "CAST('2024-01-01 00:00:00+00:00' AS TIMESTAMP)"
    assert m["end_dt"] == "CAST('2024-01-01 23:59:59.999999+00:00' AS TIMESTAMP)"
    assert m["start_millis"] == "1704067200000"
    assert m["end_millis"] == "1704153599999"
    assert m["execution_ds"] == "'2024-01-03'"
    assert m["execution_ts"] == "'2024-01-03 07:08:09'"


def test_hourly_interval_macros_end_just_before_the_next_hour():
    m = _macros(iv("2024-01-01 05:00:00", "2024-01-01 06:00:00"), "2024-01-01 06:30:00")
    assert m["start_ds"] == m["end_ds"] == "'2024-01-01'"
    assert m["start_ts"] == "'2024-01-01 05:00:00'"
    assert m["end_ts"] == "'2024-01-01 05:59:59.999999'"
    assert m["start_date"] == m["end_date"] == "CAST('2024-01-01' AS DATE)"
    assert m["start_dt"] == "CAST('2024-01-01 05:00:00+00:00' AS TIMESTAMP)"
    assert m["end_dt"] == "CAST('2024-01-01 05:59:59.999999+00:00' AS TIMESTAMP)"
    assert m["start_millis"] == str(to_ms("2024-01-01 05:00:00"))
    assert m["end_millis"] == str(to_ms("2024-01-01 06:00:00") - 1)
    assert m["execution_ds"] == "'2024-01-01'"


def test_midnight_ending_hourly_interval_ends_on_the_previous_day():
    m = _macros(iv("2024-02-29 23:00:00", "2024-03-01"), "2024-03-01 01:00:00")
    assert (m["start_ds"], m["end_ds"]) == ("'2024-02-29'", "'2024-02-29'")
    assert m["end_ts"] == "'2024-02-29 23:59:59.999999'"


def test_multi_day_batch_macros_span_the_whole_batch():
    m = _macros(iv("2024-01-01", "2024-02-01"), "2024-02-02")
    assert (m["start_ds"], m["end_ds"]) == ("'2024-01-01'", "'2024-01-31'")


def test_render_substitutes_macros_in_any_case_but_not_inside_strings():
    q = "SELECT '@start_ds' AS literal, @START_DS AS s, @end_millis AS e FROM s.t WHERE ds <= @end_date"
    rendered = render_query(q, iv("2024-01-01", "2024-01-02"), 0, where="model a.b").sql("spark")
    assert rendered == (
        "SELECT '@start_ds' AS literal, '2024-01-01' AS s, 1704153599999 AS e "
        "FROM s.t WHERE ds <= CAST('2024-01-01' AS DATE)"
    )


def test_render_refuses_an_unknown_macro_naming_the_model_and_the_known_ones():
    with pytest.raises(ModelDefinitionError) as info:
        render_query("SELECT @start_week AS h", iv("2024-01-01", "2024-01-02"), 0, where="model a.b")
    message = str(info.value)
    assert message.startswith("model a.b: unknown macro @start_week; known macros: ")
    assert "@start_ds" in message and "@end_ts" in message and "@execution_ds" in message


# =========================================================================== model references -> environment tables


def test_table_for_uses_the_model_name_in_prod_and_a_suffixed_schema_elsewhere():
    assert table_for("sales.daily", "prod").sql("spark") == "`sales`.`daily`"
    assert table_for("sales.daily", "dev").sql("spark") == "`sales__dev`.`daily`"
    assert table_for("sales db.t-1", "feature_x").sql("spark") == "`sales db__feature_x`.`t-1`"


def test_render_maps_model_references_to_their_environment_tables_keeping_aliases():
    q = "SELECT d.x, Daily.y FROM sales.daily AS d CROSS JOIN Sales.Daily JOIN raw.events AS e ON TRUE"
    table_map = {"sales.daily": table_for("sales.daily", "dev")}
    rendered = render_query(q, iv("2024-01-01", "2024-01-02"), 0, where="m", table_map=table_map).sql("spark")
    assert rendered == (
        "SELECT d.x, Daily.y FROM `sales__dev`.`daily` AS d CROSS JOIN `sales__dev`.`daily` AS Daily "
        "JOIN raw.events AS e ON TRUE"
    )


def test_render_leaves_unqualified_tables_and_ctes_alone():
    q = "WITH daily AS (SELECT 1 AS x) SELECT * FROM daily"
    table_map = {"sales.daily": table_for("sales.daily", "dev")}
    rendered = render_query(q, iv("2024-01-01", "2024-01-02"), 0, where="m", table_map=table_map).sql("spark")
    assert rendered == "WITH daily AS (SELECT 1 AS x) SELECT * FROM daily"


def test_render_leaves_a_same_named_table_in_another_catalog_alone():
    q = "SELECT * FROM other_catalog.sales.daily"
    table_map = {"sales.daily": table_for("sales.daily", "dev")}
    rendered = render_query(q, iv("2024-01-01", "2024-01-02"), 0, where="m", table_map=table_map).sql("spark")
    assert rendered == "SELECT * FROM other_catalog.sales.daily"


# =========================================================================== output filter


def _filter_case(path: Path) -> tuple[str, str | None, Interval, str]:
    header: dict[str, str] = {}
    body = []
    for line in path.read_text().splitlines():
        if line.startswith("-- ") and ":" in line and not body:
            key, _, value = line[3:].partition(":")
            header[key.strip()] = value.strip()
        else:
            body.append(line)
    start, _, end = header["interval"].partition(" / ")
    return header["type"], header.get("format"), iv(start, end), " ".join(" ".join(body).split())


@pytest.mark.parametrize("case", FILTER_FIXTURES, ids=[p.name for p in FILTER_FIXTURES])
def test_output_filter_sql_matches_the_fixture(case: Path):
    spark_type, time_format, interval, expected = _filter_case(case)
    query = sqlglot.parse_one("SELECT ds, amount FROM raw.sales", read="spark")
    assert output_filter(query, "ds", interval, spark_type, time_format).sql("spark") == expected


def test_output_filter_fixtures_cover_every_kind_of_time_column():
    types = {(_filter_case(p)[0], _filter_case(p)[1] is not None) for p in FILTER_FIXTURES}
    assert {("date", False), ("timestamp", False), ("string", True), ("int", True)} <= types


def test_output_filter_quotes_an_awkward_time_column_name():
    query = sqlglot.parse_one("SELECT 1 AS `event day`", read="spark")
    sql = output_filter(query, "event day", iv("2024-01-01", "2024-01-02"), "date", None).sql("spark")
    assert f"`{QUERY_ALIAS}`.`event day` >= CAST('2024-01-01' AS DATE)" in sql


def test_string_and_integer_bounds_are_inclusive_and_date_bounds_exclusive():
    day = iv("2024-01-01", "2024-01-02")
    assert time_bounds(day, "date", None)[2] is False
    assert time_bounds(day, "timestamp", None)[2] is False
    assert time_bounds(day, "string", "%Y%m%d")[2] is True
    assert time_bounds(day, "int", "%Y%m%d")[2] is True


@pytest.mark.parametrize(("spark_type", "time_format"), [("bigint", None), ("int", "%Y-%m"), ("double", "%Y%m%d")])
def test_time_column_type_that_cannot_hold_the_format_is_refused(spark_type, time_format):
    with pytest.raises(ModelDefinitionError, match=f"time column type {spark_type} cannot hold times"):
        time_bounds(iv("2024-01-01", "2024-01-02"), spark_type, time_format)
