/*
 * %CopyrightBegin%
 *
 * Copyright Dustin Sallings, Michal Ptaszek, Scott Lystig Fritchie 2011-2018.
 * All Rights Reserved.
 *
 * Licensed under the Apache License, Version 2.0 (the "License");
 * you may not use this file except in compliance with the License.
 * You may obtain a copy of the License at
 *
 *     http://www.apache.org/licenses/LICENSE-2.0
 *
 * Unless required by applicable law or agreed to in writing, software
 * distributed under the License is distributed on an "AS IS" BASIS,
 * WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
 * See the License for the specific language governing permissions and
 * limitations under the License.
 *
 * %CopyrightEnd%
 */

/* Excerpt (see README): the first probes of erlang_dtrace.d, doc comments shortened. */

provider erlang {
    /**
     * Fired when a message is sent from one local process to another.
     */
    probe message__send(char *sender, char *receiver, uint32_t size,
                        int token_label, int token_previous, int token_current);

    /**
     * Fired when a message is sent from a local process to a remote process.
     */
    probe message__send__remote(char *sender, char *node_name, char *receiver,
                                uint32_t size,
                        int token_label, int token_previous, int token_current);

    probe message__queued(char *receiver, uint32_t size, uint32_t queue_len,
                        int token_label, int token_previous, int token_current);

    probe message__receive(char *receiver, uint32_t size, uint32_t queue_len,
                        int token_label, int token_previous, int token_current);

    probe copy__struct(uint32_t size);

    probe copy__object(char *proc, uint32_t size);

    /* PID, Module, Function, Arity */

    probe local__function__entry(char *p, char *mfa, int depth);

    probe global__function__entry(char *p, char *mfa, int depth);

    probe function__return(char *p, char *mfa, int depth);

    probe bif__entry(char *p, char *mfa);

    probe bif__return(char *p, char *mfa);

    probe gc_major__start(char *p, int need);

    probe gc_minor__start(char *p, int need);

    probe process__spawn(char *p, char *mfa);

    probe process__exit(char *p, char *reason);

    probe process__exit_signal(char *sender, char *receiver, char *reason);

    probe process__heap_grow(char *p, int old_size, int new_size);

    probe dist__monitor(char *node, char *what, char *monitored_node,
                        char *type, char *reason);

    probe port__open(char *process, char *port_name, char *port);
};
