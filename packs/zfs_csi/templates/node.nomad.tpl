[[- template "checks" . -]]
[[- $mode := ternary "node" "monolith" (hasPrefix "zfs-generic-" (var "driver" .)) -]]
job "[[ template "prefix" . ]]-node" {
  # Every client that may mount a volume runs the node plugin.
  type = "system"
[[ template "placement" (dict "ctx" . "pool" (var "node_pool" .)) ]]

  group "node" {
[[ template "plugin_task" (dict "ctx" . "mode" $mode "job" (printf "%s-node" (coalesce (var "job_name_prefix" .) (var "plugin_id" .)))) ]]
  }
}
