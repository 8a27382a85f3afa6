"""The embedded server's sizing: the shares of memory and cores, their floors and caps, and how a
setting the server shows ('1536MB', '1.5GB') compares with the one sizing wants."""

from __future__ import annotations

from citegate.store import db
from citegate.store.sizing import (
    GB,
    MB,
    Machine,
    SettingChange,
    SettingState,
    Sizing,
    sized_settings,
)


def test_this_sandbox_two_cores_24_gib() -> None:
    s = sized_settings(Machine(24 * GB, 2))
    assert s["shared_buffers"] == "3072MB"  # an eighth: the embedder and LLM share the machine
    assert s["effective_cache_size"] == "12288MB"
    assert s["work_mem"] == "96MB" and s["maintenance_work_mem"] == "3072MB"
    assert s["max_parallel_workers_per_gather"] == "1" and s["max_parallel_workers"] == "2"
    assert s["max_worker_processes"] == "8"


def test_floors_on_a_small_machine_and_caps_on_a_big_one() -> None:
    small = sized_settings(Machine(512 * MB, 1))
    assert small["shared_buffers"] == "128MB" and small["work_mem"] == "4MB"
    assert small["maintenance_work_mem"] == "64MB" and small["effective_cache_size"] == "512MB"
    assert small["max_parallel_workers_per_gather"] == "0"
    big = sized_settings(Machine(1024 * GB, 64))
    assert big["shared_buffers"] == "8192MB" and big["work_mem"] == "256MB"
    assert big["maintenance_work_mem"] == "4096MB" and big["max_worker_processes"] == "64"


def test_a_setting_compares_by_size_not_by_spelling() -> None:
    assert SettingState("shared_buffers", "1536MB", "1536MB", False).ok
    assert SettingState("shared_buffers", "1.5GB", "1536MB", False).ok
    assert SettingState("work_mem", "4MB", "96MB", False).ok is False
    assert SettingState("max_parallel_workers", "2", "2", False).ok


def test_a_group_is_given_the_larger_graph_from_the_mark_on() -> None:
    assert db.graph_for(db.LARGE_GROUP_ROWS - 1) == db.HnswGraph()
    assert db.graph_for(db.LARGE_GROUP_ROWS) == db.LARGE_GRAPH
    assert db.LARGE_GRAPH.covers(db.HnswGraph()) and not db.HnswGraph().covers(db.LARGE_GRAPH)
    assert not db.HnswGraph(32, 64).covers(db.HnswGraph(16, 128))  # both parameters count


def test_an_index_graph_is_read_back_from_its_storage_options() -> None:
    assert db.HnswGraph.from_options(None) == db.HnswGraph()
    assert db.HnswGraph.from_options(["m=32", "ef_construction=128"]) == db.HnswGraph(32, 128)
    assert db.HnswGraph.from_options(["m=24"]) == db.HnswGraph(24, 64)


def test_an_undo_puts_back_what_alter_system_had_or_resets() -> None:
    done = Sizing(
        [
            SettingChange("work_mem", "4MB", "96MB", None),  # from the files or the default
            SettingChange("shared_buffers", "128MB", "3072MB", "256MB"),  # pending before
            SettingChange("search_path", "x", "y", "it's"),
        ],
        ["shared_buffers"],
    )
    assert done.undo_command() == (
        'psql "$DATABASE_URL" -c "ALTER SYSTEM RESET work_mem" '
        "-c \"ALTER SYSTEM SET shared_buffers = '256MB'\" "
        "-c \"ALTER SYSTEM SET search_path = 'it''s'\" "
        '-c "SELECT pg_reload_conf()"'
    )
