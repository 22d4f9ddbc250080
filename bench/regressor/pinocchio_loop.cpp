// Benchmark reference: pinocchio's computeJointTorqueRegressor (or, with ALGO = rnea, its RNEA)
// called in a C++ loop. Built by bench/regressor/run.py (and bench/rnea/run.py) at benchmark time
// against the headers of the installed `pin` wheel; the chain is passed as numbers (no URDF parser
// needed).
#include <pinocchio/multibody.hpp>

#include <pinocchio/algorithm/regressor.hpp>
#include <pinocchio/algorithm/rnea.hpp>
#include <string>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <vector>

// chain file: n, then per joint: type (0 revolute z, 1 prismatic z), R (9, row-major), p (3),
// XX XY XZ YY YZ ZZ MX MY MZ M about the joint frame origin; then gravity (3)
static pinocchio::Model read_chain(const char* path) {
  std::ifstream in(path);
  int n = 0;
  in >> n;
  pinocchio::Model model;
  pinocchio::JointIndex parent = 0;
  for (int i = 0; i < n; ++i) {
    int type;
    Eigen::Matrix3d R;
    Eigen::Vector3d p;
    double v[10];
    in >> type;
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 3; ++c) in >> R(r, c);
    in >> p(0) >> p(1) >> p(2);
    for (double& x : v) in >> x;
    const pinocchio::SE3 placement(R, p);
    const std::string name = "joint" + std::to_string(i + 1);
    parent = type == 0 ? model.addJoint(parent, pinocchio::JointModelRZ(), placement, name)
                       : model.addJoint(parent, pinocchio::JointModelPZ(), placement, name);
    const double m = v[9];
    const Eigen::Vector3d com = m > 0 ? Eigen::Vector3d(v[6] / m, v[7] / m, v[8] / m) : Eigen::Vector3d::Zero();
    Eigen::Matrix3d Io;
    Io << v[0], v[1], v[2], v[1], v[3], v[4], v[2], v[4], v[5];
    const Eigen::Matrix3d Ic = Io - m * (com.squaredNorm() * Eigen::Matrix3d::Identity() - com * com.transpose());
    model.appendBodyToJoint(parent, pinocchio::Inertia(m, com, Ic), pinocchio::SE3::Identity());
  }
  double gx, gy, gz;
  in >> gx >> gy >> gz;
  if (!in) { std::fprintf(stderr, "chain: could not read %s\n", path); std::exit(2); }
  model.gravity.linear() << gx, gy, gz;
  return model;
}

// q, then qd, then qdd, each (N, n) row-major, as doubles
static std::vector<double> read_states(const char* path, long N, int n) {
  std::vector<double> states(3 * N * n);
  std::ifstream in(path, std::ios::binary);
  in.read(reinterpret_cast<char*>(states.data()), states.size() * sizeof(double));
  if (!in) { std::fprintf(stderr, "states: could not read %ld samples\n", N); std::exit(2); }
  return states;
}

// the arguments both loops take: CHAIN STATES N REPEATS STORE
struct Run {
  pinocchio::Model model;
  long N;
  int repeats;  // the first pass is a warm-up, not reported
  bool store;
  std::vector<double> states;
};

static Run read_run(char** argv) {
  Run run;
  run.model = read_chain(argv[1]);
  run.N = std::atol(argv[3]);
  run.repeats = std::atoi(argv[4]) + 1;
  run.store = std::atoi(argv[5]) != 0;
  run.states = read_states(argv[2], run.N, run.model.nv);
  return run;
}

// pinocchio::rnea per sample; store = 1 copies each torque into one (N, n) array, store = 0 reads
// one entry. Prints the CPU seconds of each repeat and the last sample's torque.
static int rnea_loop(char** argv) {
  const Run run = read_run(argv);
  const pinocchio::Model& model = run.model;
  pinocchio::Data data(model);
  const long N = run.N; const int repeats = run.repeats, n = model.nv; const bool store = run.store;
  const std::vector<double>& states = run.states;
  std::vector<double> out(store ? N * n : 1);
  double check = 0.0;
  std::printf("{\"seconds\": [");
  for (int r = 0; r < repeats; ++r) {
    timespec t0, t1;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
    for (long s = 0; s < N; ++s) {
      const Eigen::Map<const Eigen::VectorXd> q(&states[s * n], n), v(&states[(N + s) * n], n),
          a(&states[(2 * N + s) * n], n);
      const Eigen::VectorXd& tau = pinocchio::rnea(model, data, q, v, a);
      if (store)
        Eigen::Map<Eigen::VectorXd>(&out[s * n], n) = tau;
      else
        check += tau(0);
    }
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
    if (r > 0) std::printf("%s%.9f", r > 1 ? ", " : "", double(t1.tv_sec - t0.tv_sec) + 1e-9 * double(t1.tv_nsec - t0.tv_nsec));
  }
  if (store) for (long k = 0; k < (long)out.size(); k += 7) check += out[k];
  std::printf("], \"checksum\": %.17g, \"tau_last\": [", check);
  for (int i = 0; i < n; ++i) std::printf("%s%.17g", i ? ", " : "", data.tau(i));
  std::printf("]}\n");
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 6 && argc != 7) { std::fprintf(stderr, "usage: ref CHAIN STATES N REPEATS STORE [regressor|rnea]\n"); return 2; }
  if (argc == 7 && std::string(argv[6]) == "rnea") return rnea_loop(argv);
  const Run run = read_run(argv);
  const pinocchio::Model& model = run.model;
  pinocchio::Data data(model);
  const long N = run.N; const int repeats = run.repeats, n = model.nv; const bool store = run.store;
  const std::vector<double>& states = run.states;
  const long cols = 10 * n;
  // store = 1: every sample's n x 10n regressor is copied into one (N*n, 10n) array, as a batch
  // regressor must deliver it; store = 0: only one entry per sample is read (compute alone)
  std::vector<double> out(store ? N * n * cols : 1);
  double check = 0.0;
  std::printf("{\"seconds\": [");
  for (int r = 0; r < repeats; ++r) {
    timespec t0, t1;  // CPU time of this thread, as the Python side measures its single-threaded runs
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
    for (long s = 0; s < N; ++s) {
      const Eigen::Map<const Eigen::VectorXd> q(&states[s * n], n), v(&states[(N + s) * n], n),
          a(&states[(2 * N + s) * n], n);
      const auto& Y = pinocchio::computeJointTorqueRegressor(model, data, q, v, a);
      if (store)
        Eigen::Map<Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(&out[s * n * cols], n, cols) = Y;
      else
        check += Y(0, cols - 1);
    }
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
    if (r > 0) std::printf("%s%.9f", r > 1 ? ", " : "", double(t1.tv_sec - t0.tv_sec) + 1e-9 * double(t1.tv_nsec - t0.tv_nsec));
  }
  // tau of the last sample from the regressor and pinocchio's own parameters (for the check),
  // and a checksum that keeps the loop from being optimised away
  const long s = N - 1;
  const auto& Y = pinocchio::computeJointTorqueRegressor(
      model, data, Eigen::Map<const Eigen::VectorXd>(&states[s * n], n),
      Eigen::Map<const Eigen::VectorXd>(&states[(N + s) * n], n),
      Eigen::Map<const Eigen::VectorXd>(&states[(2 * N + s) * n], n));
  Eigen::VectorXd pi(cols);
  for (int i = 0; i < n; ++i) pi.segment<10>(10 * i) = model.inertias[i + 1].toDynamicParameters();
  const Eigen::VectorXd tau = Y * pi;
  if (store) for (long k = 0; k < (long)out.size(); k += 97) check += out[k];
  std::printf("], \"checksum\": %.17g, \"tau_last\": [", check);
  for (int i = 0; i < n; ++i) std::printf("%s%.17g", i ? ", " : "", tau(i));
  std::printf("]}\n");
  return 0;
}
