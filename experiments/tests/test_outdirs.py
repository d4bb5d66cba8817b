"""Runs started in the same second get a results folder each."""
from p4cc_exp import outdirs


def test_same_second_runs_get_their_own_folders(tmp_path):
    name = f"dc-fct-{outdirs.stamp()}"
    made = [outdirs.new_dir(tmp_path / "results", name) for _ in range(3)]
    assert [d.name for d in made] == [name, f"{name}-2", f"{name}-3"]
    assert all(d.is_dir() and not any(d.iterdir()) for d in made)
    # A folder someone left behind is never reused either.
    (tmp_path / "results" / f"{name}-5").mkdir()
    assert outdirs.new_dir(tmp_path / "results", name).name == f"{name}-4"
    assert outdirs.new_dir(tmp_path / "results", name).name == f"{name}-6"
