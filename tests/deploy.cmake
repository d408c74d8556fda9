# --- Deployment (issue 22): the Debian package, installed on a bare Debian 12, and the image ----
# package_deb makes build/package/clusterbench_*.deb (cpack) and checks its layout and Depends;
# deploy_package installs it with apt in a chroot of the cached minbase root and runs the ci suite
# there; deploy_image builds the Containerfile's runtime stage from it with buildah (chroot
# isolation, a base imported from the same root) and runs the ci suite and a 2-rank mpirun in it.
cb_integration_test(package_deb TIMEOUT 120 FIXTURES_SETUP deb_package)
cb_integration_test(deploy_package TIMEOUT 900 FIXTURES_REQUIRED deb_package LOCKS rootfs)
cb_integration_test(deploy_image TIMEOUT 900 FIXTURES_REQUIRED deb_package LOCKS rootfs)
