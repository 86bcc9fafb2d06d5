The [[ var "driver" . ]] plugin "[[ var "plugin_id" . ]]" is submitted.
[[- $ns := "" ]][[ if var "namespace" . ]][[ $ns = printf " -namespace %s" (var "namespace" .) ]][[ end ]]
[[- if hasPrefix "zfs-generic-" (var "driver" .) ]]

1. Store the SSH key where the controller reads it (never in the pack's variables, never for the node job;
   -force replaces a stored one):
[[- if var "secrets_variable_path" . ]]
     nomad var put -force[[ $ns ]] [[ var "secrets_variable_path" . ]] ssh_private_key=@id_ed25519
[[- else ]]
[[- $prefix := coalesce (var "job_name_prefix" .) (var "plugin_id" .) ]]
     nomad var put -force[[ $ns ]] nomad/jobs/[[ $prefix ]]-controller ssh_private_key=@id_ed25519
[[- end ]]
[[- end ]]

2. Wait until the plugin is healthy:
     nomad plugin status [[ var "plugin_id" . ]]

3. Create the volumes of the pack's volumes variable:
     nomad-pack render packs/zfs_csi -f YOUR.hcl -o out/
     ansible localhost -m nomad_zfs.csi.nomad_csi_volume -a spec_file=out/zfs_csi/volumes.json
