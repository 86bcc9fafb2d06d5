The [[ var "driver" . ]] plugin "[[ var "plugin_id" . ]]" is submitted.

1. Store the SSH key where the jobs read it (never in the pack's variables):
     nomad var put [[ var "secrets_variable_path" . ]] ssh_private_key=@id_ed25519
2. Wait until the plugin is healthy:
     nomad plugin status [[ var "plugin_id" . ]]
3. Render and register the volume specs:
     nomad-pack render packs/zfs_csi -f YOUR.hcl -o out/
     ansible localhost -m nomad_zfs.csi.nomad_csi_volume -a 'spec_file=out/zfs_csi/templates/volumes.json'
   or PUT each entry to /v1/volume/csi/ID/create.
