/* llmt_limits.h: size limits shared by the plugin's pure modules: every
 * buffer that holds user or admin input is fixed-size, so nothing a user
 * sends makes the plugin allocate without bound. (Not named limits.h:
 * spank/ is on the include path and would shadow the system <limits.h>.) */
#ifndef LLMT_LIMITS_H
#define LLMT_LIMITS_H

#define LLMT_SPEC_MAX     4096   /* longest --llm-train=SPEC accepted (bytes) */
#define LLMT_PATH_MAX     1024   /* longest path (checkpoint dir, policy, topology) */
#define LLMT_NAME_MAX     64     /* profile, node type, partition, account names */
#define LLMT_HOST_MAX     128    /* one host name */
#define LLMT_HOSTLIST_MAX 8192   /* one hostlist expression in policy/topology */
#define LLMT_VALUE_MAX    256    /* one NCCL variable value (before substitution) */
#define LLMT_MAX_TASKS    1048576u /* most tasks a rank map accepts */
#define LLMT_MAX_NODES    262144u  /* most nodes in a topology or a step */
#define LLMT_POLICY_MAX_BYTES (1u << 20) /* largest policy file read */
#define LLMT_YAML_MAX_DEPTH 16     /* mappings and lists nested in a policy or model config */
#define LLMT_YAML_MAX_ANCHORS 64   /* anchors (&name) in one */

#endif
