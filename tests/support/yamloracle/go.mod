// The YAML readers devlane's output must satisfy, as the test oracle (tests/support/yamloracle.py): the versions
// kubectl 1.37 (k8s.io/kubectl v0.37.2) and kustomize's kyaml v0.21 build with. Built by tests/setup_yamloracle.sh.
module devlane.test/yamloracle

go 1.22

require (
	go.yaml.in/yaml/v2 v2.4.4
	go.yaml.in/yaml/v3 v3.0.4
	sigs.k8s.io/yaml v1.6.0
)
