"""robodyn.calibration: kinematic calibration after Li et al. 2023, "Kinematics application calibration
method of collaborative robot", extended to real arms (see docs/calibration.md).

Modules, in the order a calibration uses them:

* ``parameters``      the DH parameter vector (MDH or standard DH, Hayati tilts, base, tool) and its
                      analytic Jacobian, built on the shared kinematics
* ``measurements``    what is measured (points of several targets, orientations, planar contacts),
                      each weighted by its stated noise, and the residual that compares it
* ``identifiability`` rank, singular values, condition number, redundant parameters
* ``planning``        test cube, valid random poses, D-optimal selection, ISO 9283 points
* ``simulation``      simulated robot (true deviations, elastic joints) and laser tracker
* ``heavy_arm``       a simulated heavy arm whose truth has effects the model lacks (bending links, ...)
* ``collect``         measuring a plan on the real robot through the daemon and a tracker hook
* ``geometric``       nonlinear least-squares identification of the geometry
* ``stiffness``       gravity and payload deflection, joint compliance identification
* ``methods``         the identification methods (Li et al. 2023 Table 4, combined-gravity) and the result
* ``ik``              closed-form UR inverse kinematics and the numeric fallback
* ``compensation``    joint-space compensation
* ``checks``          the warnings: poorly identifiable parameters, extrapolated poses, outliers
* ``robots``          the shipped calibration models and a model file's [calibration] table
* ``measurement_csv`` the measurement CSV (units checked or detected) and the measurement frame
* ``result_file``     the calibration result JSON
* ``workflow``        the steps of ``robodyn calibrate`` (plan, measure, identify, evaluate, identifiability)
* ``result_use``      compensated joint angles and URDF export of a result
* ``li2023``          the numbers Li et al. 2023 publish
* ``paper_replay``    the Li et al. 2023 experiment end to end on the simulated UR5
"""
