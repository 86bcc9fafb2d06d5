[[- template "checks" . -]]
[[- if hasPrefix "zfs-generic-" (var "driver" .) -]]
job "[[ template "prefix" . ]]-controller" {
  type = "service"
[[ template "placement" (dict "ctx" . "pool" (coalesce (var "controller_node_pool" .) (var "node_pool" .))) ]]

  group "controller" {
    count = [[ var "controller_count" . ]]

    # Two controllers on one host protect against nothing.
    constraint {
      distinct_hosts = true
    }

[[ template "plugin_task" (dict "ctx" . "mode" "controller" "job" (printf "%s-controller" (coalesce (var "job_name_prefix" .) (var "plugin_id" .)))) ]]
  }
}
[[- end -]]
