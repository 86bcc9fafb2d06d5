[[- /* Auxiliary file: `nomad-pack render -o DIR` writes it; run and plan ignore it. */ -]]
[[- $ctx := . -]]
{"Volumes": [
[[- range $i, $v := var "volumes" . ]]
[[- if $i ]],[[ end ]]
  {
    "ID": [[ $v.id | toJson ]],
    "Name": [[ $v.name | toJson ]],
    "PluginID": [[ var "plugin_id" $ctx | toJson ]],
[[- if var "namespace" $ctx ]]
    "Namespace": [[ var "namespace" $ctx | toJson ]],
[[- end ]]
    "RequestedCapacityMin": [[ $v.capacity_min | int64 ]],
    "RequestedCapacityMax": [[ $v.capacity_max | int64 ]],
    "RequestedCapabilities": [{"AccessMode": [[ $v.access_mode | toJson ]], "AttachmentMode": [[ $v.attachment_mode | toJson ]]}],
    "MountOptions": {"FSType": [[ $v.fs_type | toJson ]], "MountFlags": [[ $v.mount_flags | toJson ]]},
    "Parameters": [[ $v.parameters | toJson ]],
    "Context": [[ $v.context | toJson ]]
  }
[[- end ]]
]}
