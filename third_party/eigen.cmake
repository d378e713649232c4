# Eigen 3 (Debian: libeigen3-dev). Provides Eigen3::Eigen.
find_package(Eigen3 3.3 REQUIRED NO_MODULE)
