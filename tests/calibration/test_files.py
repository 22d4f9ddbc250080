import numpy as np
import pytest

from robodyn.calibration.methods import MeasurementSet, calibrate
from robodyn.calibration.measurement_csv import load_measurements, measurement_frame, write_measurements_csv
from robodyn.calibration.result_file import result_from_dict, result_to_dict
from robodyn.calibration.planning import sample_poses
from robodyn.calibration.simulation import measure_poses, ur5_li2023_cell
from robodyn.calibration.stiffness import Load
from robodyn.robot.kinematics import rot_z, trans


@pytest.fixture(scope="module")
def cell_and_meas(ur5_robot, ur5_setup, ur5_cube):
    cube, q_ref = ur5_cube
    q = sample_poses(ur5_robot, ur5_setup, cube, 30, q_ref, seed=31).q
    gm, cell = ur5_li2023_cell(seed=2)
    return gm, cell, measure_poses(cell, q)


def test_csv_round_trip_and_unit_detection(tmp_path, cell_and_meas):
    gm, _, meas = cell_and_meas
    for unit in ("m", "mm"):
        path = tmp_path / f"meas_{unit}.csv"
        write_measurements_csv(path, meas, robot="ur5_li2023", tool=np.zeros(3), unit=unit)
        text = path.read_text()
        stripped = tmp_path / f"bare_{unit}.csv"  # no metadata: the unit must be detected
        stripped.write_text("\n".join(l for l in text.splitlines() if not l.startswith("#")) + "\n")
        back, info = load_measurements(stripped, gm)
        assert info["position_unit"] == unit and info["angle_unit"] == "rad"
        assert np.allclose(back.p, meas.p, atol=1e-12) and np.allclose(back.q, meas.q)
        assert back.ids == meas.ids


def test_spatial_analyzer_style_export_in_mm_and_degrees(tmp_path, cell_and_meas):
    gm, _, meas = cell_and_meas
    rows = ["Point\tX [mm]\tY [mm]\tZ [mm]\tJ1 (deg)\tJ2 (deg)\tJ3 (deg)\tJ4 (deg)\tJ5 (deg)\tJ6 (deg)\tRMS"]
    for k in range(len(meas)):
        rows.append("\t".join([f"pt{k}"] + [f"{v * 1000:.4f}" for v in meas.p[k]]
                              + [f"{v:.6f}" for v in np.rad2deg(meas.q[k])] + ["0.01"]))
    path = tmp_path / "sa.txt"
    path.write_text("\n".join(rows) + "\n")
    back, info = load_measurements(path, gm)
    assert (info["position_unit"], info["angle_unit"]) == ("mm", "deg")
    assert np.allclose(back.p, meas.p, atol=1e-7) and back.ids[0] == "pt0"
    with pytest.raises(ValueError, match="units: m was given but the file says mm"):
        load_measurements(path, gm, units="m")


def test_mm_data_declared_as_metres_is_refused(tmp_path, cell_and_meas):
    gm, _, meas = cell_and_meas
    path = tmp_path / "mm.csv"
    write_measurements_csv(path, meas, robot="ur5_li2023", tool=np.zeros(3), unit="mm")
    bare = tmp_path / "bare.csv"
    bare.write_text("\n".join(l for l in path.read_text().splitlines() if not l.startswith("#")) + "\n")
    with pytest.raises(ValueError, match=r"x/y/z: the measured positions of bare.csv do not match"):
        load_measurements(bare, gm, units="m")


@pytest.mark.parametrize("edit, message", [
    (lambda h, r: (h.replace(",q6", ",q6x"), r), "q6: column missing"),
    (lambda h, r: (h + ",q7", [x + ",0.1" for x in r]), "q7: .* the robot has 6 joints"),
    (lambda h, r: (h.replace(",z", ",height"), r), "z: column missing"),
    (lambda h, r: (h, [r[0] + ",9"] + r[1:]), "data row 1: expected 10 fields"),
    (lambda h, r: (h, [r[0].rsplit(",", 1)[0] + ",abc"] + r[1:]), "z: not a number"),
    (lambda h, r: (h.replace("q2,q3", "q3,q2"), r), "x/y/z: the measured positions .* do not match"),
])
def test_mismatched_columns_name_the_field(tmp_path, cell_and_meas, edit, message):
    gm, _, meas = cell_and_meas
    path = tmp_path / "m.csv"
    write_measurements_csv(path, meas, robot="ur5_li2023", tool=np.zeros(3))
    lines = [l for l in path.read_text().splitlines() if not l.startswith("#")]
    header, rows = edit(lines[0], lines[1:])
    path.write_text("\n".join([header] + rows) + "\n")
    with pytest.raises(ValueError, match=message):
        load_measurements(path, gm, units="m", angles="rad")


def test_tracker_frame_data_is_recognised(cell_and_meas):
    gm, _, meas = cell_and_meas
    B = trans(2.1, -0.4, 0.9) @ rot_z(2.0)
    moved = MeasurementSet(meas.q, meas.p @ B[:3, :3].T + B[:3, 3])
    base, rms_aligned, rms_nominal = measurement_frame(gm, moved)
    assert rms_nominal > 1.0 and rms_aligned < 0.01
    assert np.allclose(base[:3, 3], B[:3, 3], atol=0.01)


def test_result_json_round_trip_predicts_the_same(cell_and_meas):
    gm, cell, meas = cell_and_meas
    result = calibrate(gm, meas, known_compliance=cell.robot.compliance)
    back = result_from_dict(result_to_dict(result, "ur5_li2023"))
    load = Load(4.678, (0.0, -0.03686, 0.02985))
    assert np.array_equal(back.params, result.params) and back.method == "combined"
    assert np.allclose(back.predict(meas.q, load), result.predict(meas.q, load), atol=1e-15)
    doc = result_to_dict(result, "ur5_li2023")
    doc["parameters"]["a3"]["nominal"] += 1e-3
    with pytest.raises(ValueError, match="nominal values differ"):
        result_from_dict(doc)
